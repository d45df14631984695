"""CoordinationService against a real SQLite file, with an injected clock for expiry."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from lithos.errors import (
    ClaimFailed,
    ClaimNotFound,
    InvalidInput,
    TaskNotFound,
    TaskNotOpen,
)
from lithos.services.agents import AgentRegistry
from lithos.services.coordination import CoordinationService
from lithos.store.coordination import COORDINATION_MIGRATIONS
from lithos.store.sqlite import Database
from tests.services.conftest import START, Clock


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@pytest.fixture
def service(db: Database, agents: AgentRegistry, clock: Clock) -> CoordinationService:
    return CoordinationService(db, agents, default_ttl_minutes=60, max_ttl_minutes=480, clock=clock)


async def new_task(
    service: CoordinationService,
    agent: str = "alice",
    description: str | None = None,
    tags: list[str] | None = None,
) -> str:
    created = await service.create_task("Survey rate limiting", agent, description, tags)
    return str(created["task_id"])


async def listed(service: CoordinationService, task_id: str) -> dict[str, object]:
    (task,) = [t for t in (await service.list_tasks())["tasks"] if t["id"] == task_id]
    return dict(task)


# tasks


async def test_create_task_returns_a_task_id(service: CoordinationService) -> None:
    created = await service.create_task("Survey rate limiting", "alice")
    assert created["task_id"].startswith("task-")
    assert len(created["task_id"]) == len("task-") + 12


async def test_created_task_is_listed_open_with_its_fields(service: CoordinationService) -> None:
    task_id = await new_task(service, description="Compare algorithms", tags=["api", " research"])
    assert await listed(service, task_id) | {"updated_at": None} == {
        "id": task_id,
        "title": "Survey rate limiting",
        "description": "Compare algorithms",
        "status": "open",
        "created_by": "alice",
        "created_at": stamp(START),
        "tags": ["api", "research"],
        "updated_at": None,
        "outcome": None,
        "closed_at": None,
        "closed_by": None,
        "cancel_reason": None,
    }


async def test_blank_title_is_invalid_input(service: CoordinationService) -> None:
    with pytest.raises(InvalidInput):
        await service.create_task("   ", "alice")


async def test_creating_a_task_registers_the_creator(
    service: CoordinationService, agents: AgentRegistry
) -> None:
    await new_task(service, agent="newcomer")
    assert (await agents.info("newcomer"))["id"] == "newcomer"


async def test_update_replaces_title_description_and_tags(
    service: CoordinationService, clock: Clock
) -> None:
    task_id = await new_task(service, tags=["old"])
    clock.advance(minutes=1)
    result = await service.update_task(task_id, "bob", title="New", description="D", tags=["x"])
    task = await listed(service, task_id)
    assert result == {"success": True, "message": f"Task {task_id} updated"}
    assert (task["title"], task["description"], task["tags"]) == ("New", "D", ["x"])
    assert task["updated_at"] == stamp(START + timedelta(minutes=1))


async def test_update_keeps_fields_not_given(service: CoordinationService) -> None:
    task_id = await new_task(service, description="Keep me", tags=["keep"])
    await service.update_task(task_id, "bob", title="Renamed")
    task = await listed(service, task_id)
    assert (task["description"], task["tags"]) == ("Keep me", ["keep"])


async def test_update_without_any_change_is_invalid_input(service: CoordinationService) -> None:
    task_id = await new_task(service)
    with pytest.raises(InvalidInput):
        await service.update_task(task_id, "bob")


async def test_update_of_unknown_task_is_task_not_found(service: CoordinationService) -> None:
    with pytest.raises(TaskNotFound):
        await service.update_task("task-000000000000", "bob", title="x")


async def test_update_of_a_closed_task_is_task_not_open(service: CoordinationService) -> None:
    task_id = await new_task(service)
    await service.complete(task_id, "alice")
    with pytest.raises(TaskNotOpen):
        await service.update_task(task_id, "bob", title="x")


# claims


async def test_claim_expires_after_the_default_ttl(service: CoordinationService) -> None:
    task_id = await new_task(service)
    result = await service.claim(task_id, "research", "alice")
    assert result == {"success": True, "expires_at": stamp(START + timedelta(minutes=60))}


async def test_claim_ttl_is_clamped_to_the_maximum(service: CoordinationService) -> None:
    task_id = await new_task(service)
    result = await service.claim(task_id, "research", "alice", ttl_minutes=10_000)
    assert result["expires_at"] == stamp(START + timedelta(minutes=480))


async def test_claim_ttl_below_one_is_invalid_input(service: CoordinationService) -> None:
    task_id = await new_task(service)
    with pytest.raises(InvalidInput):
        await service.claim(task_id, "research", "alice", ttl_minutes=0)


async def test_blank_aspect_is_invalid_input(service: CoordinationService) -> None:
    task_id = await new_task(service)
    with pytest.raises(InvalidInput):
        await service.claim(task_id, " ", "alice")


async def test_live_claim_of_another_agent_makes_claim_fail(service: CoordinationService) -> None:
    task_id = await new_task(service)
    await service.claim(task_id, "research", "alice")
    with pytest.raises(ClaimFailed) as failure:
        await service.claim(task_id, "research", "bob")
    assert failure.value.details["holder"] == "alice"


async def test_holder_reclaiming_its_live_claim_extends_it(
    service: CoordinationService, clock: Clock
) -> None:
    task_id = await new_task(service)
    await service.claim(task_id, "research", "alice", ttl_minutes=10)
    clock.advance(minutes=5)
    result = await service.claim(task_id, "research", "alice", ttl_minutes=10)
    assert result["expires_at"] == stamp(START + timedelta(minutes=15))


async def test_expired_claim_can_be_reclaimed_by_another_agent(
    service: CoordinationService, clock: Clock
) -> None:
    task_id = await new_task(service)
    await service.claim(task_id, "research", "alice", ttl_minutes=10)
    clock.advance(minutes=10)
    result = await service.claim(task_id, "research", "bob", ttl_minutes=10)
    assert result["expires_at"] == stamp(START + timedelta(minutes=20))
    (task,) = (await service.status(task_id))["tasks"]
    assert [claim["agent"] for claim in task["claims"]] == ["bob"]


async def test_different_aspects_are_claimed_independently(service: CoordinationService) -> None:
    task_id = await new_task(service)
    await service.claim(task_id, "research", "alice")
    await service.claim(task_id, "review", "bob")
    (task,) = (await service.status(task_id))["tasks"]
    assert {(c["aspect"], c["agent"]) for c in task["claims"]} == {
        ("research", "alice"),
        ("review", "bob"),
    }


async def test_claim_on_unknown_task_is_task_not_found(service: CoordinationService) -> None:
    with pytest.raises(TaskNotFound):
        await service.claim("task-000000000000", "research", "alice")


async def test_claim_on_a_closed_task_is_task_not_open(service: CoordinationService) -> None:
    task_id = await new_task(service)
    await service.cancel(task_id, "alice")
    with pytest.raises(TaskNotOpen):
        await service.claim(task_id, "research", "alice")


async def test_claiming_refreshes_the_agent_last_seen(
    service: CoordinationService, agents: AgentRegistry, clock: Clock
) -> None:
    task_id = await new_task(service, agent="alice")
    clock.advance(hours=1)
    await service.claim(task_id, "research", "alice")
    assert (await agents.info("alice"))["last_seen_at"] == stamp(START + timedelta(hours=1))


async def test_fifty_concurrent_claimers_on_one_loop_have_exactly_one_winner(
    service: CoordinationService,
) -> None:
    task_id = await new_task(service)
    outcomes = await asyncio.gather(
        *(service.claim(task_id, "research", f"agent-{n}") for n in range(50)),
        return_exceptions=True,
    )
    winners = [o for o in outcomes if isinstance(o, dict)]
    assert len(winners) == 1
    assert all(isinstance(o, ClaimFailed) for o in outcomes if not isinstance(o, dict))


def claim_in_own_connection(db_path: Path, task_id: str, agent: str) -> str:
    """Claim through a second Database object on the same file; report the outcome."""
    db = Database(db_path, COORDINATION_MIGRATIONS)
    try:
        service = CoordinationService(db, AgentRegistry(db), 60, 480)
        asyncio.run(service.claim(task_id, "research", agent))
        return "won"
    except ClaimFailed:
        return "failed"
    finally:
        db.close()


async def test_claimers_in_threads_with_their_own_connections_have_exactly_one_winner(
    service: CoordinationService, db_path: Path
) -> None:
    task_id = await new_task(service)
    barrier = threading.Barrier(8)
    outcomes: list[str] = []

    def claimer(n: int) -> None:
        barrier.wait()
        outcomes.append(claim_in_own_connection(db_path, task_id, f"thread-{n}"))

    threads = [threading.Thread(target=claimer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(outcomes) == ["failed"] * 7 + ["won"]


CLAIMER_PROCESS = textwrap.dedent(
    """
    import asyncio, pathlib, sys, time
    from lithos.errors import ClaimFailed
    from lithos.services.agents import AgentRegistry
    from lithos.services.coordination import CoordinationService
    from lithos.store.coordination import COORDINATION_MIGRATIONS
    from lithos.store.sqlite import Database

    db_path, task_id, agent, go = sys.argv[1:]
    db = Database(pathlib.Path(db_path), COORDINATION_MIGRATIONS)
    service = CoordinationService(db, AgentRegistry(db), 60, 480)
    while not pathlib.Path(go).exists():
        time.sleep(0.005)
    try:
        asyncio.run(service.claim(task_id, "research", agent))
        print("won")
    except ClaimFailed:
        print("failed")
    finally:
        db.close()
    """
)


async def test_claimers_in_separate_processes_have_exactly_one_winner(
    service: CoordinationService, db_path: Path, tmp_path: Path
) -> None:
    task_id = await new_task(service)
    go = tmp_path / "go"
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIMER_PROCESS, str(db_path), task_id, f"proc-{n}", str(go)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(6)
    ]
    await asyncio.sleep(0.5)
    go.touch()
    outcomes = [process.communicate(timeout=120)[0].strip() for process in processes]
    assert sorted(outcomes) == ["failed"] * 5 + ["won"]


# renew and release


async def test_renew_moves_the_expiry_to_now_plus_ttl(
    service: CoordinationService, clock: Clock
) -> None:
    task_id = await new_task(service)
    await service.claim(task_id, "research", "alice", ttl_minutes=10)
    clock.advance(minutes=8)
    result = await service.renew(task_id, "research", "alice", ttl_minutes=30)
    assert result == {"success": True, "new_expires_at": stamp(START + timedelta(minutes=38))}


async def test_renew_ttl_is_clamped_to_the_maximum(service: CoordinationService) -> None:
    task_id = await new_task(service)
    await service.claim(task_id, "research", "alice")
    result = await service.renew(task_id, "research", "alice", ttl_minutes=999)
    assert result["new_expires_at"] == stamp(START + timedelta(minutes=480))


async def test_renew_by_another_agent_is_claim_not_found(service: CoordinationService) -> None:
    task_id = await new_task(service)
    await service.claim(task_id, "research", "alice")
    with pytest.raises(ClaimNotFound):
        await service.renew(task_id, "research", "bob")


async def test_expired_claim_cannot_be_renewed(service: CoordinationService, clock: Clock) -> None:
    task_id = await new_task(service)
    await service.claim(task_id, "research", "alice", ttl_minutes=10)
    clock.advance(minutes=11)
    with pytest.raises(ClaimNotFound):
        await service.renew(task_id, "research", "alice")


async def test_renew_on_unknown_task_is_task_not_found(service: CoordinationService) -> None:
    with pytest.raises(TaskNotFound):
        await service.renew("task-000000000000", "research", "alice")


async def test_released_aspect_can_be_claimed_by_another_agent(
    service: CoordinationService,
) -> None:
    task_id = await new_task(service)
    await service.claim(task_id, "research", "alice")
    assert await service.release(task_id, "research", "alice") == {"success": True}
    assert (await service.claim(task_id, "research", "bob"))["success"] is True


async def test_release_by_another_agent_is_claim_not_found_and_keeps_the_claim(
    service: CoordinationService,
) -> None:
    task_id = await new_task(service)
    await service.claim(task_id, "research", "alice")
    with pytest.raises(ClaimNotFound):
        await service.release(task_id, "research", "bob")
    (task,) = (await service.status(task_id))["tasks"]
    assert [claim["agent"] for claim in task["claims"]] == ["alice"]


async def test_release_of_an_unclaimed_aspect_is_claim_not_found(
    service: CoordinationService,
) -> None:
    task_id = await new_task(service)
    with pytest.raises(ClaimNotFound):
        await service.release(task_id, "research", "alice")


# complete and cancel


async def test_complete_releases_every_claim(service: CoordinationService) -> None:
    task_id = await new_task(service)
    await service.claim(task_id, "research", "alice")
    await service.claim(task_id, "review", "bob")
    assert await service.complete(task_id, "alice") == {"success": True}
    (task,) = (await service.status(task_id))["tasks"]
    assert (task["status"], task["claims"]) == ("completed", [])


async def test_complete_records_outcome_closer_and_time(
    service: CoordinationService, clock: Clock
) -> None:
    task_id = await new_task(service)
    clock.advance(minutes=3)
    await service.complete(task_id, "bob", outcome="Found three strategies")
    task = await listed(service, task_id)
    closed_at = stamp(START + timedelta(minutes=3))
    assert (task["outcome"], task["closed_by"], task["closed_at"]) == (
        "Found three strategies",
        "bob",
        closed_at,
    )


async def test_complete_persists_retrieval_feedback(service: CoordinationService) -> None:
    task_id = await new_task(service)
    await service.complete(
        task_id, "alice", cited_nodes=["n1", "n2"], misleading_nodes=[], receipt_id="rcpt-1"
    )
    (feedback,) = await service.feedback(task_id)
    assert (feedback.agent, feedback.cited_nodes, feedback.misleading_nodes) == (
        "alice",
        ("n1", "n2"),
        (),
    )
    assert feedback.receipt_id == "rcpt-1"


async def test_complete_without_feedback_records_none(service: CoordinationService) -> None:
    task_id = await new_task(service)
    await service.complete(task_id, "alice", outcome="done")
    assert await service.feedback(task_id) == []


async def test_completing_a_closed_task_is_task_not_open(service: CoordinationService) -> None:
    task_id = await new_task(service)
    await service.complete(task_id, "alice")
    with pytest.raises(TaskNotOpen):
        await service.complete(task_id, "alice")


async def test_completing_an_unknown_task_is_task_not_found(service: CoordinationService) -> None:
    with pytest.raises(TaskNotFound):
        await service.complete("task-000000000000", "alice")


async def test_cancel_releases_claims_and_keeps_the_reason(service: CoordinationService) -> None:
    task_id = await new_task(service)
    await service.claim(task_id, "research", "alice")
    await service.cancel(task_id, "bob", reason="duplicate")
    task = await listed(service, task_id)
    assert (task["status"], task["cancel_reason"], task["closed_by"]) == (
        "cancelled",
        "duplicate",
        "bob",
    )
    assert (await service.counts())["open_claims"] == 0


async def test_cancelling_a_completed_task_is_task_not_open(service: CoordinationService) -> None:
    task_id = await new_task(service)
    await service.complete(task_id, "alice")
    with pytest.raises(TaskNotOpen):
        await service.cancel(task_id, "alice")


# listing, status, counts


async def test_list_filters_by_status(service: CoordinationService) -> None:
    open_id = await new_task(service)
    done_id = await new_task(service)
    await service.complete(done_id, "alice")
    listed_open = await service.list_tasks(status="open")
    assert [task["id"] for task in listed_open["tasks"]] == [open_id]


async def test_list_filters_by_creator(service: CoordinationService) -> None:
    await new_task(service, agent="alice")
    bobs = await new_task(service, agent="bob")
    assert [task["id"] for task in (await service.list_tasks(agent="bob"))["tasks"]] == [bobs]


async def test_list_keeps_only_tasks_having_every_tag(service: CoordinationService) -> None:
    both = await new_task(service, tags=["api", "research"])
    await new_task(service, tags=["api"])
    result = await service.list_tasks(tags=["research", "api"])
    assert [task["id"] for task in result["tasks"]] == [both]


async def test_list_since_keeps_tasks_created_at_or_after(
    service: CoordinationService, clock: Clock
) -> None:
    await new_task(service)
    clock.advance(minutes=10)
    later = await new_task(service)
    since = stamp(START + timedelta(minutes=10))
    assert [task["id"] for task in (await service.list_tasks(since=since))["tasks"]] == [later]


async def test_list_accepts_since_with_an_offset(
    service: CoordinationService, clock: Clock
) -> None:
    await new_task(service)
    clock.advance(hours=2)
    later = await new_task(service)
    result = await service.list_tasks(since="2026-01-05T11:00:00+01:00")
    assert [task["id"] for task in result["tasks"]] == [later]


async def test_list_with_a_garbage_since_is_invalid_input(service: CoordinationService) -> None:
    with pytest.raises(InvalidInput):
        await service.list_tasks(since="yesterday")


async def test_list_with_an_unknown_status_is_invalid_input(service: CoordinationService) -> None:
    with pytest.raises(InvalidInput):
        await service.list_tasks(status="done")  # type: ignore[arg-type]


async def test_status_without_id_shows_open_tasks_only(service: CoordinationService) -> None:
    open_id = await new_task(service)
    closed_id = await new_task(service)
    await service.cancel(closed_id, "alice")
    assert [task["id"] for task in (await service.status())["tasks"]] == [open_id]


async def test_status_excludes_expired_claims(service: CoordinationService, clock: Clock) -> None:
    task_id = await new_task(service)
    await service.claim(task_id, "research", "alice", ttl_minutes=5)
    await service.claim(task_id, "review", "bob", ttl_minutes=50)
    clock.advance(minutes=6)
    (task,) = (await service.status())["tasks"]
    assert task["claims"] == [
        {
            "agent": "bob",
            "aspect": "review",
            "claimed_at": stamp(START),
            "expires_at": stamp(START + timedelta(minutes=50)),
        }
    ]


async def test_status_of_unknown_task_is_task_not_found(service: CoordinationService) -> None:
    with pytest.raises(TaskNotFound):
        await service.status("task-000000000000")


async def test_counts_exclude_expired_claims_and_closed_tasks(
    service: CoordinationService, clock: Clock
) -> None:
    first = await new_task(service)
    second = await new_task(service)
    closed = await new_task(service)
    await service.claim(first, "research", "alice", ttl_minutes=5)
    await service.claim(second, "research", "alice", ttl_minutes=50)
    await service.claim(second, "review", "bob", ttl_minutes=50)
    await service.complete(closed, "alice")
    clock.advance(minutes=6)
    assert await service.counts() == {"active_tasks": 2, "open_claims": 2, "agents": 2}


# findings


async def test_posted_finding_is_listed_with_its_fields(service: CoordinationService) -> None:
    task_id = await new_task(service)
    posted = await service.post_finding(task_id, "bob", "Token bucket fits", knowledge_id="k-1")
    assert (await service.list_findings(task_id))["findings"] == [
        {
            "id": posted["finding_id"],
            "task_id": task_id,
            "agent": "bob",
            "summary": "Token bucket fits",
            "knowledge_id": "k-1",
            "created_at": stamp(START),
        }
    ]


async def test_finding_ids_start_with_finding(service: CoordinationService) -> None:
    task_id = await new_task(service)
    posted = await service.post_finding(task_id, "bob", "Token bucket fits")
    assert posted["finding_id"].startswith("finding-")


async def test_finding_on_unknown_task_is_task_not_found(service: CoordinationService) -> None:
    with pytest.raises(TaskNotFound):
        await service.post_finding("task-000000000000", "bob", "x")


async def test_finding_with_blank_summary_is_invalid_input(service: CoordinationService) -> None:
    task_id = await new_task(service)
    with pytest.raises(InvalidInput):
        await service.post_finding(task_id, "bob", "  ")


async def test_list_findings_since_keeps_findings_strictly_after(
    service: CoordinationService, clock: Clock
) -> None:
    task_id = await new_task(service)
    await service.post_finding(task_id, "bob", "first")
    clock.advance(seconds=1)
    await service.post_finding(task_id, "bob", "second")
    result = await service.list_findings(task_id, since=stamp(START))
    assert [finding["summary"] for finding in result["findings"]] == ["second"]


async def test_list_findings_with_a_garbage_since_is_invalid_input(
    service: CoordinationService,
) -> None:
    task_id = await new_task(service)
    with pytest.raises(InvalidInput):
        await service.list_findings(task_id, since="not-a-time")


async def test_list_findings_of_unknown_task_is_task_not_found(
    service: CoordinationService,
) -> None:
    with pytest.raises(TaskNotFound):
        await service.list_findings("task-000000000000")
