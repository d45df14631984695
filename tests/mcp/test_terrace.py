"""Terrace 2 through a real MCP client against a fake OpenAI-compatible endpoint: a real HTTP
server on the loopback interface in a thread of the test (no network). Good answers reorder
and annotate the results; refusals, garbage and timeouts leave Terrace 1's answer, reported as
degraded."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from bench.terrace_eval import serving
from lithos.app import LithosApp
from lithos.domain.edges import EdgeUpsert
from lithos.domain.retrieval import RetrievedNote
from lithos.mcp.server import create_server
from lithos.retrieval.terrace import (
    Interpreted,
    LlmSettings,
    build_prompt,
    should_follow_up,
    should_use_llm_pass,
)
from tests.support import call, make_app

Reply = Callable[[dict[str, Any]], tuple[int, bytes]]


@dataclass
class FakeModel:
    """What the fake endpoint answers, and what it was asked."""

    reply: Reply
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)


def completion(content: str) -> tuple[int, bytes]:
    body = {"choices": [{"message": {"role": "assistant", "content": content}}]}
    return 200, json.dumps(body).encode()


@pytest.fixture
def model() -> Iterator[tuple[FakeModel, str]]:
    fake = FakeModel(reply=lambda request: completion("{}"))

    def answer(request: dict[str, Any], headers: dict[str, str]) -> tuple[int, bytes]:
        fake.requests.append(request)
        fake.headers.append(headers)
        return fake.reply(request)

    with serving(answer) as url:
        try:
            yield fake, url
        finally:
            fake.release.set()


@pytest.fixture
async def llm_client(
    tmp_path: Path, model: tuple[FakeModel, str], monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Client, FakeModel, LithosApp]]:
    fake, url = model
    monkeypatch.setenv("TEST_LLM_KEY", "sekret")
    llm = {
        "enabled": True,
        "base_url": url,
        "model": "fake-1",
        "api_key_env": "TEST_LLM_KEY",
        "timeout_seconds": 1.0,
        "max_tokens": 123,
    }
    app = make_app(tmp_path / "data", **{"lcma.llm": llm})
    app.start(watch=False)
    try:
        async with Client(create_server(app)) as client:
            yield client, fake, app
    finally:
        app.close()


NOTES = [
    ("Inverter sizing", "solar inverter sizing for a 6 kW array"),
    ("Panel tilt", "solar panel tilt angle by latitude"),
    ("Battery storage", "solar battery storage for the night"),
]


async def seed(client: Client) -> dict[str, str]:
    ids = {}
    for title, content in NOTES:
        result = await call(client, "lithos_write", agent="a", title=title, content=content)
        ids[title] = str(result["id"])
    return ids


async def retrieve(client: Client, query: str) -> dict[str, Any]:
    result = await call(client, "lithos_retrieve", query=query, limit=3)
    assert "results" in result, result
    return result


def numbered(request: dict[str, Any]) -> dict[str, int]:
    """title -> the number the prompt gave it."""
    prompt = request["messages"][1]["content"]
    found = {}
    for line in prompt.splitlines():
        if line.startswith("[") and "] " in line:
            number, title = line[1:].split("] ", 1)
            found[title] = int(number)
    return found


async def test_the_model_reorders_and_annotates_the_results(llm_client):
    client, fake, _ = llm_client
    ids = await seed(client)

    def answer(request: dict[str, Any]) -> tuple[int, bytes]:
        n = numbered(request)
        ranking = [
            {"n": n["Battery storage"], "why": "answers the night-time question"},
            {"n": n["Inverter sizing"], "why": "sizing matters too"},
        ]
        return completion("```json\n" + json.dumps({"ranking": ranking}) + "\n```")

    fake.reply = answer
    result = await retrieve(client, "solar battery at night")
    assert result["terrace_reached"] == 2 and result["degraded"] is False
    order = [r["id"] for r in result["results"]]
    assert order[:2] == [ids["Battery storage"], ids["Inverter sizing"]]
    assert order[2] == ids["Panel tilt"]
    top = result["results"][0]["reasons"][-1]
    assert top == "llm: fake-1 ranked it 1 of 2: answers the night-time question"
    assert not any(r.startswith("llm:") for r in result["results"][2]["reasons"])
    # What was sent: the model, the reply budget, the key from the environment, the query.
    [request] = fake.requests
    assert request["model"] == "fake-1" and request["max_tokens"] == 123
    assert fake.headers[0]["Authorization"] == "Bearer sekret"
    assert "Query: solar battery at night" in request["messages"][1]["content"]
    receipt = await call(client, "lithos_receipt_get", receipt_id=result["receipt_id"])
    assert receipt["terrace_reached"] == 2
    assert receipt["final_nodes"][0]["reasons"][-1] == top


@pytest.mark.parametrize(
    "reply",
    [
        lambda request: (500, b'{"error": "overloaded"}'),
        lambda request: (200, b"this is not json"),
        lambda request: completion("I think the second note is best."),
        lambda request: completion('{"ranking": [{"n": 99}]}'),
        lambda request: (200, b'{"choices": []}'),
    ],
    ids=["http-500", "not-json", "prose", "unknown-numbers", "no-choices"],
)
async def test_a_failing_model_degrades_to_terrace_one(llm_client, reply: Reply):
    client, fake, _ = llm_client
    await seed(client)
    fake.reply = reply
    result = await retrieve(client, "solar battery at night")
    assert result["terrace_reached"] == 1
    assert result["degraded"] is True and result["failed_scouts"] == ["terrace_2"]
    assert len(result["results"]) == 3
    assert not any(r.startswith("llm:") for hit in result["results"] for r in hit["reasons"])
    receipt = await call(client, "lithos_receipt_get", receipt_id=result["receipt_id"])
    assert receipt["terrace_reached"] == 1 and receipt["scouts_failed"] == ["terrace_2"]


async def test_a_slow_model_times_out_and_degrades(llm_client):
    client, fake, _ = llm_client
    await seed(client)

    def stall(request: dict[str, Any]) -> tuple[int, bytes]:
        fake.release.wait(10)  # released when the test ends
        return completion("{}")

    fake.reply = stall
    result = await retrieve(client, "solar battery at night")
    assert result["terrace_reached"] == 1 and result["failed_scouts"] == ["terrace_2"]
    assert len(result["results"]) == 3


async def test_an_unreachable_endpoint_degrades(tmp_path: Path):
    llm = {"enabled": True, "base_url": "http://127.0.0.1:9/v1", "model": "m"}
    app = make_app(tmp_path / "data", **{"lcma.llm": llm})
    app.start(watch=False)
    try:
        async with Client(create_server(app)) as client:
            await seed(client)
            result = await retrieve(client, "solar battery at night")
    finally:
        app.close()
    assert result["terrace_reached"] == 1 and result["failed_scouts"] == ["terrace_2"]


async def test_a_cold_query_does_not_call_the_model(llm_client):
    client, fake, app = llm_client
    ids = list((await seed(client)).values())
    for a, b in itertools.combinations(ids, 2):
        await app.edges.upsert(EdgeUpsert(a, b, "supports", weight=1.0))
    result = await retrieve(client, "solar")
    assert result["temperature"] <= 0.6 and result["terrace_reached"] == 1
    assert result["degraded"] is False and fake.requests == []


async def test_a_hot_threshold_of_its_own_keeps_warm_queries_from_the_model(
    tmp_path: Path, model: tuple[FakeModel, str]
):
    fake, url = model
    fake.reply = lambda request: completion('{"ranking": [{"n": 1}]}')
    llm = {"enabled": True, "base_url": url, "model": "m", "hot_threshold": 0.99}
    app = make_app(tmp_path / "data", **{"lcma.llm": llm})
    app.start(watch=False)
    try:
        interpreter = app.retrieval.interpreter
        assert interpreter is not None and interpreter.settings.hot_threshold == 0.99
        async with Client(create_server(app)) as client:
            await seed(client)
            result = await retrieve(client, "solar battery at night")
    finally:
        app.close()
    # Hot for exploration (above 0.6), not for the model: the model is never asked.
    assert 0.6 < result["temperature"] <= 0.99
    assert result["terrace_reached"] == 1 and fake.requests == []
    default = make_app(tmp_path / "other", **{"lcma.llm": {**llm, "hot_threshold": None}})
    try:
        assert default.retrieval.interpreter is not None
        assert default.retrieval.interpreter.settings.hot_threshold == 0.6
    finally:
        default.close()


def test_should_use_llm_pass_follows_the_design():
    settings = LlmSettings(True, "http://x/v1", "m", "", 100, 1000, 1.0, 10, 0.6, 0.25)
    assert should_use_llm_pass("lookup", 0.3, False, settings) is False  # cold: no model
    assert should_use_llm_pass("lookup", 0.0, True, settings) is True  # conflicts
    assert should_use_llm_pass("design", 0.3, False, settings) is True  # warm design question
    assert should_use_llm_pass("design", 0.2, False, settings) is False
    assert should_use_llm_pass("lookup", 0.61, False, settings) is True  # hot


def test_the_prompt_respects_its_token_budget():
    notes = [
        RetrievedNote(str(i), f"Note {i}", "word " * 200, 1.0, "p", "", "", False, (), (), (), 0.5)
        for i in range(10)
    ]
    prompt, shown = build_prompt("q", notes, budget_tokens=200)
    assert 1 <= shown < 10 and len(prompt) <= 200 * 4
    _, one = build_prompt("q", notes, budget_tokens=1)
    assert one == 1  # at least one note, however small the budget


LITHIUM = ("Lithium cells", "lithium iron phosphate chemistry lasts longer")
FOLLOWUP_REASON = "follow-up: found for the model's follow-up query 'lithium phosphate chemistry'"


@pytest.fixture
async def hot_llm(
    tmp_path: Path, model: tuple[FakeModel, str]
) -> AsyncIterator[tuple[Client, FakeModel, dict[str, str]]]:
    """Every query hot (so an unsure model's follow-ups run), with a note on lithium cells
    that the query about solar batteries at night does not find by itself."""
    fake, url = model
    llm = {"enabled": True, "base_url": url, "model": "fake-1", "timeout_seconds": 1.0}
    app = make_app(tmp_path / "data", **{"lcma.llm": llm, "lcma.exploration": {"threshold": 0.0}})
    app.start(watch=False)
    try:
        async with Client(create_server(app)) as client:
            ids = {}
            for title, content in [*NOTES, LITHIUM]:
                written = await call(
                    client, "lithos_write", agent="a", title=title, content=content
                )
                ids[title] = str(written["id"])
            assert app.embedding.wait_idle(10)
            yield client, fake, ids
    finally:
        app.close()


def unsure_then_sure(request: dict[str, Any]) -> tuple[int, bytes]:
    """Unsure while the lithium note is missing (asking for it), sure once it is shown."""
    n = numbered(request)
    if "Lithium cells" not in n:
        followups = ["lithium phosphate chemistry", "lithium phosphate chemistry", " "]
        answer = {"ranking": [{"n": 1}], "confidence": 0.2, "followups": followups}
    else:
        answer = {"ranking": [{"n": n["Lithium cells"], "why": "the chemistry"}], "confidence": 0.9}
    return completion(json.dumps(answer))


async def test_an_unsure_model_on_a_hot_query_follows_up_and_is_asked_again(hot_llm):
    client, fake, ids = hot_llm
    fake.reply = unsure_then_sure
    result = await retrieve(client, "solar battery at night")
    assert len(fake.requests) == 2
    assert "Lithium cells" not in numbered(fake.requests[0])
    assert "Lithium cells" in numbered(fake.requests[1])
    assert result["terrace_reached"] == 2 and result["degraded"] is False
    top = result["results"][0]
    assert top["id"] == ids["Lithium cells"] and "scout_followup" in top["scouts"]
    assert FOLLOWUP_REASON in top["reasons"]
    assert top["reasons"][-1] == "llm: fake-1 ranked it 1 of 1: the chemistry"
    assert len(top["reasons"]) == len(set(top["reasons"]))  # reranked once, annotated once
    receipt = await call(client, "lithos_receipt_get", receipt_id=result["receipt_id"])
    assert "scout_followup" in receipt["scouts_fired"] and "followup" in receipt["timings_ms"]
    assert receipt["terrace_reached"] == 2 and receipt["final_nodes"][0]["id"] == top["id"]


@pytest.mark.parametrize("confidence", [0.9, None], ids=["sure", "no-confidence"])
async def test_a_sure_model_is_asked_once(hot_llm, confidence: float | None):
    client, fake, ids = hot_llm
    answer = {"ranking": [{"n": 1}], "followups": ["lithium phosphate chemistry"]}
    if confidence is not None:
        answer["confidence"] = confidence
    fake.reply = lambda request: completion(json.dumps(answer))
    result = await retrieve(client, "solar battery at night")
    assert len(fake.requests) == 1 and result["terrace_reached"] == 2
    assert ids["Lithium cells"] not in [r["id"] for r in result["results"]]


async def test_a_failing_second_call_keeps_the_first_answer_degraded(hot_llm):
    client, fake, ids = hot_llm

    def answer(request: dict[str, Any]) -> tuple[int, bytes]:
        if "Lithium cells" in numbered(request):
            return 500, b'{"error": "overloaded"}'
        return unsure_then_sure(request)

    fake.reply = answer
    result = await retrieve(client, "solar battery at night")
    assert len(fake.requests) == 2
    assert result["terrace_reached"] == 2
    assert result["degraded"] is True and result["failed_scouts"] == ["terrace_2"]
    assert result["results"][0]["reasons"][-1] == "llm: fake-1 ranked it 1 of 1"
    assert ids["Lithium cells"] not in [r["id"] for r in result["results"]]


def test_should_follow_up_follows_the_design():
    settings = LlmSettings(True, "http://x/v1", "m", "", 100, 1000, 1.0, 10, 0.6, 0.25, 0.5, 2)
    unsure = Interpreted((), 0.3, ("a", "b", "c"))
    assert should_follow_up(unsure, 0.7, settings) == ("a", "b")  # unsure and hot
    assert should_follow_up(unsure, 0.6, settings) == ()  # not hot
    assert should_follow_up(Interpreted((), 0.5, ("a",)), 0.9, settings) == ()  # sure enough
    assert should_follow_up(Interpreted((), None, ("a",)), 0.9, settings) == ()  # no confidence
    never = replace(settings, followup_queries=0)
    assert should_follow_up(unsure, 0.9, never) == ()
