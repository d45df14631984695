"""The coordination tools through a real in-memory MCP client over a started app."""

from __future__ import annotations

from typing import Any

import pytest
from fastmcp import Client

from tests.support import call


async def create(client: Client, title: str = "Survey rate limiting", **extra: Any) -> str:
    created = await call(client, "lithos_task_create", title=title, agent="alice", **extra)
    return str(created["task_id"])


async def test_documented_workflow_runs_end_to_end(client: Client) -> None:
    task_id = await create(client, description="Compare algorithms", tags=["research"])
    claimed = await call(
        client, "lithos_task_claim", task_id=task_id, aspect="research", agent="bob"
    )
    renewed = await call(
        client, "lithos_task_renew", task_id=task_id, aspect="research", agent="bob", ttl_minutes=90
    )
    status = await call(client, "lithos_task_status", task_id=task_id)
    posted = await call(
        client, "lithos_finding_post", task_id=task_id, agent="bob", summary="Token bucket fits"
    )
    findings = await call(client, "lithos_finding_list", task_id=task_id)
    completed = await call(
        client, "lithos_task_complete", task_id=task_id, agent="bob", outcome="Chose token bucket"
    )
    after = await call(client, "lithos_task_status", task_id=task_id)

    assert claimed["success"] is True and claimed["expires_at"].endswith("Z")
    assert renewed["success"] is True and renewed["new_expires_at"] > claimed["expires_at"]
    assert [(c["agent"], c["aspect"]) for c in status["tasks"][0]["claims"]] == [
        ("bob", "research")
    ]
    assert [f["id"] for f in findings["findings"]] == [posted["finding_id"]]
    assert completed == {"success": True}
    assert (after["tasks"][0]["status"], after["tasks"][0]["claims"]) == ("completed", [])


async def test_task_update_changes_the_listed_metadata(client: Client) -> None:
    task_id = await create(client, tags=["old"])
    updated = await call(
        client, "lithos_task_update", task_id=task_id, agent="bob", title="Renamed", tags=["new"]
    )
    (task,) = (await call(client, "lithos_task_list"))["tasks"]
    assert updated["success"] is True
    assert (task["title"], task["tags"]) == ("Renamed", ["new"])


async def test_task_cancel_closes_the_task_and_frees_its_claims(client: Client) -> None:
    task_id = await create(client)
    await call(client, "lithos_task_claim", task_id=task_id, aspect="research", agent="bob")
    cancelled = await call(
        client, "lithos_task_cancel", task_id=task_id, agent="alice", reason="duplicate"
    )
    (task,) = (await call(client, "lithos_task_list", status="cancelled"))["tasks"]
    assert cancelled == {"success": True}
    assert (task["id"], task["cancel_reason"]) == (task_id, "duplicate")
    assert (await call(client, "lithos_task_status"))["tasks"] == []


async def test_task_list_filters_by_status_and_tags(client: Client) -> None:
    wanted = await create(client, tags=["api", "research"])
    await create(client, tags=["api"])
    done = await create(client, tags=["api", "research"])
    await call(client, "lithos_task_complete", task_id=done, agent="alice")
    listed = await call(client, "lithos_task_list", status="open", tags=["api", "research"])
    assert [task["id"] for task in listed["tasks"]] == [wanted]


async def test_task_release_lets_another_agent_claim(client: Client) -> None:
    task_id = await create(client)
    await call(client, "lithos_task_claim", task_id=task_id, aspect="research", agent="bob")
    released = await call(
        client, "lithos_task_release", task_id=task_id, aspect="research", agent="bob"
    )
    reclaimed = await call(
        client, "lithos_task_claim", task_id=task_id, aspect="research", agent="carol"
    )
    assert released == {"success": True}
    assert reclaimed["success"] is True


async def test_finding_list_since_returns_only_newer_findings(client: Client) -> None:
    task_id = await create(client)
    await call(client, "lithos_finding_post", task_id=task_id, agent="bob", summary="first")
    await call(client, "lithos_finding_post", task_id=task_id, agent="bob", summary="second")
    (first, _) = (await call(client, "lithos_finding_list", task_id=task_id))["findings"]
    newer = await call(client, "lithos_finding_list", task_id=task_id, since=first["created_at"])
    assert [finding["summary"] for finding in newer["findings"]] == ["second"]


async def test_claim_held_by_another_agent_returns_claim_failed(client: Client) -> None:
    task_id = await create(client)
    await call(client, "lithos_task_claim", task_id=task_id, aspect="research", agent="bob")
    failed = await call(
        client, "lithos_task_claim", task_id=task_id, aspect="research", agent="carol"
    )
    assert (failed["status"], failed["code"]) == ("error", "claim_failed")
    assert failed["details"]["holder"] == "bob"


async def test_renew_by_another_agent_returns_claim_not_found(client: Client) -> None:
    task_id = await create(client)
    await call(client, "lithos_task_claim", task_id=task_id, aspect="research", agent="bob")
    failed = await call(
        client, "lithos_task_renew", task_id=task_id, aspect="research", agent="carol"
    )
    assert failed["code"] == "claim_not_found"


async def test_release_without_a_claim_returns_claim_not_found(client: Client) -> None:
    task_id = await create(client)
    failed = await call(
        client, "lithos_task_release", task_id=task_id, aspect="research", agent="bob"
    )
    assert failed["code"] == "claim_not_found"


async def test_completing_twice_returns_task_not_open(client: Client) -> None:
    task_id = await create(client)
    await call(client, "lithos_task_complete", task_id=task_id, agent="alice")
    failed = await call(client, "lithos_task_complete", task_id=task_id, agent="alice")
    assert failed["code"] == "task_not_open"


async def test_claim_on_a_cancelled_task_returns_task_not_open(client: Client) -> None:
    task_id = await create(client)
    await call(client, "lithos_task_cancel", task_id=task_id, agent="alice")
    failed = await call(client, "lithos_task_claim", task_id=task_id, aspect="x", agent="bob")
    assert failed["code"] == "task_not_open"


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("lithos_task_claim", {"aspect": "research", "agent": "bob"}),
        ("lithos_task_renew", {"aspect": "research", "agent": "bob"}),
        ("lithos_task_release", {"aspect": "research", "agent": "bob"}),
        ("lithos_task_update", {"agent": "bob", "title": "x"}),
        ("lithos_task_complete", {"agent": "bob"}),
        ("lithos_task_cancel", {"agent": "bob"}),
        ("lithos_task_status", {}),
        ("lithos_finding_post", {"agent": "bob", "summary": "x"}),
        ("lithos_finding_list", {}),
    ],
)
async def test_unknown_task_returns_task_not_found(
    client: Client, tool: str, arguments: dict[str, Any]
) -> None:
    failed = await call(client, tool, task_id="task-000000000000", **arguments)
    assert (failed["status"], failed["code"]) == ("error", "task_not_found")


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("lithos_task_create", {"title": "", "agent": "alice"}),
        ("lithos_task_create", {"title": "   ", "agent": "alice"}),
        ("lithos_task_create", {"title": "T", "agent": ""}),
        ("lithos_task_claim", {"task_id": "t", "aspect": "a", "agent": "b", "ttl_minutes": 0}),
        ("lithos_task_claim", {"task_id": "t", "aspect": "", "agent": "b"}),
        ("lithos_task_list", {"status": "done"}),
        ("lithos_task_list", {"since": "yesterday"}),
        ("lithos_finding_list", {"task_id": "t", "since": "not-a-time"}),
        ("lithos_finding_post", {"task_id": "t", "agent": "b", "summary": ""}),
    ],
    ids=[
        "empty title",
        "blank title",
        "empty agent",
        "ttl 0",
        "empty aspect",
        "bad status",
        "bad task since",
        "bad finding since",
        "empty summary",
    ],
)
async def test_bad_arguments_return_invalid_input(
    client: Client, tool: str, arguments: dict[str, Any]
) -> None:
    failed = await call(client, tool, **arguments)
    assert (failed["status"], failed["code"]) == ("error", "invalid_input")


async def test_update_without_any_change_returns_invalid_input(client: Client) -> None:
    task_id = await create(client)
    failed = await call(client, "lithos_task_update", task_id=task_id, agent="bob")
    assert failed["code"] == "invalid_input"
