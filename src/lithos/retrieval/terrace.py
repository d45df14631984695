"""Terrace 2 (LCMA-DESIGN 5.4): an optional interpretive pass by a language model over the
best results of Terrace 1.

The model sits behind any OpenAI-compatible ``/chat/completions`` endpoint (``lcma.llm.*``,
off by default). It sees the query and the best results (numbered titles and snippets, as
many as the prompt budget allows) and answers with the order it finds most useful and a short
reason per note; retrieval puts those notes first in that order and adds the model's reason
(``llm: ...``) to each. Nothing requires it: a failure, a timeout or a reply that cannot be
read leaves Terrace 1's answer as it was, reported as degraded.

When it runs is :func:`should_use_llm_pass`: hot queries and disputed results go deeper, a
cold, simple query does not pay for a model call (LCMA-DESIGN 2.2, disagreement 2). When the
model is unsure of a hot query's notes it may name follow-up queries; :func:`should_follow_up`
decides whether retrieval runs them and asks the model once more (LCMA-DESIGN 5.4).

The call uses the standard library's HTTP client in a worker thread, bounded by the socket
timeout and by an overall deadline.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import logging
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from lithos.domain.retrieval import QueryClass, RetrievedNote

log = logging.getLogger("lithos.retrieval.terrace")

TERRACE_TWO = "terrace_2"  # its name in failed_scouts when it fails
FOLLOWUP = "scout_followup"  # the evidence the model's follow-up queries found
# Query classes for which a moderately warm result deserves interpretation (LCMA-DESIGN 5.4
# names design, synthesis and decision; retrieval's "design" class covers all three: its cue
# words include decide, recommend, summarize and overview).
INTERPRETIVE_CLASSES: frozenset[str] = frozenset({"design"})
_CHARS_PER_TOKEN = 4  # a rough, model-independent estimate for the prompt budget
_SNIPPET_CHARS = 300
_REASON_CHARS = 200

_FOLLOWUP_CHARS = 200
MAX_FOLLOWUPS = 3

SYSTEM_PROMPT = (
    "You choose which notes best answer a query. You are given the query and numbered notes. "
    'Reply with JSON only: {"ranking": [{"n": <note number>, "why": "<one short sentence>"}], '
    '"confidence": <0 to 1>, "followups": ["<short search query>"]}. List the notes that '
    "help, most useful first; leave out the ones that do not. confidence is how well the "
    "notes together answer the query. If they miss something, give up to 3 short search "
    "queries that would find it in followups; otherwise an empty list."
)


@dataclass(frozen=True)
class LlmSettings:
    enabled: bool
    base_url: str
    model: str
    api_key_env: str
    max_tokens: int  # reply budget, sent to the endpoint
    prompt_token_budget: int  # the prompt is cut to about this many tokens
    timeout_seconds: float
    candidates: int  # best results the model sees at most
    hot_threshold: float  # temperature above which any query goes to Terrace 2
    class_threshold: float  # ... and above which a design query does
    followup_confidence: float = 0.5  # below it, a hot query's follow-ups are run
    followup_queries: int = 2  # follow-up queries run at most (0: never)


class TerraceFailed(Exception):
    """The model could not be asked or its answer could not be used."""


@dataclass(frozen=True)
class Pick:
    index: int  # 0-based position among the notes shown to the model
    why: str


@dataclass(frozen=True)
class Interpretation:
    picks: tuple[Pick, ...]
    confidence: float | None
    followups: tuple[str, ...] = ()


@dataclass(frozen=True)
class Interpreted:
    """The notes as the model ordered them, how sure it was, and what it would look up."""

    results: tuple[RetrievedNote, ...]
    confidence: float | None
    followups: tuple[str, ...]


def should_use_llm_pass(
    query_class: QueryClass, temperature: float, has_conflicts: bool, settings: LlmSettings
) -> bool:
    """LCMA-DESIGN 5.4: conflicts among the results, a warm design question or any hot query
    go to the model; a cold query does not (low temperature never triggers it)."""
    if has_conflicts:
        return True
    if query_class in INTERPRETIVE_CLASSES and temperature > settings.class_threshold:
        return True
    return temperature > settings.hot_threshold


def should_follow_up(
    interpreted: Interpreted, temperature: float, settings: LlmSettings
) -> tuple[str, ...]:
    """LCMA-DESIGN 5.4: when the model's confidence is below ``followup_confidence`` and the
    query is still hot, the follow-up queries to run (at most ``followup_queries``); else
    none. A reply without a confidence is not a low one."""
    confidence = interpreted.confidence
    if confidence is None or confidence >= settings.followup_confidence:
        return ()
    if temperature <= settings.hot_threshold:
        return ()
    return interpreted.followups[: settings.followup_queries]


def build_prompt(query: str, notes: Sequence[RetrievedNote], budget_tokens: int) -> tuple[str, int]:
    """The user message and how many of ``notes`` it shows (at least one, then as many as
    fit in the budget)."""
    lines = [f"Query: {query}", "", "Notes:"]
    used = sum(len(line) + 1 for line in lines)
    shown = 0
    for i, note in enumerate(notes, 1):
        snippet = " ".join(note.snippet.split())[:_SNIPPET_CHARS]
        entry = f"[{i}] {note.title}\n{snippet}"
        if shown and used + len(entry) + 1 > budget_tokens * _CHARS_PER_TOKEN:
            break
        lines.append(entry)
        used += len(entry) + 1
        shown += 1
    return "\n".join(lines), shown


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


def parse_reply(body: bytes, shown: int) -> Interpretation:
    """The picks of an OpenAI-compatible chat completion; raises TerraceFailed for anything
    that is not a ranking of the notes shown."""
    try:
        reply = json.loads(body)
        content = reply["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise TerraceFailed(f"not a chat completion: {exc!r}") from None
    if not isinstance(content, str):
        raise TerraceFailed("the reply has no text")
    text = _FENCE.sub("", content.strip())
    start, end = text.find("{"), text.rfind("}")
    try:
        answer = json.loads(text[start : end + 1]) if start >= 0 else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict) or not isinstance(answer.get("ranking"), list):
        raise TerraceFailed("the model's answer is not a JSON ranking")
    picks: list[Pick] = []
    seen: set[int] = set()
    for item in answer["ranking"]:
        number = item.get("n", item.get("id")) if isinstance(item, dict) else item
        try:
            index = int(str(number).strip("[] ")) - 1
        except ValueError:
            continue
        if 0 <= index < shown and index not in seen:
            seen.add(index)
            why = item.get("why", "") if isinstance(item, dict) else ""
            picks.append(Pick(index, " ".join(str(why).split())[:_REASON_CHARS]))
    if not picks:
        raise TerraceFailed("the model ranked none of the notes it was shown")
    confidence = answer.get("confidence")
    value = float(confidence) if isinstance(confidence, int | float) else None
    return Interpretation(tuple(picks), value, _followups(answer.get("followups")))


def _followups(value: object) -> tuple[str, ...]:
    """The model's follow-up queries: distinct non-empty strings, each cut short."""
    if not isinstance(value, list):
        return ()
    found: list[str] = []
    for item in value:
        text = " ".join(str(item).split())[:_FOLLOWUP_CHARS] if isinstance(item, str) else ""
        if text and text not in found:
            found.append(text)
    return tuple(found[:MAX_FOLLOWUPS])


def apply(
    notes: Sequence[RetrievedNote], picks: Sequence[Pick], model: str
) -> tuple[RetrievedNote, ...]:
    """The model's picks first in its order, each with its reason; the rest keep their order
    after them. Scores stay Terrace 1's."""
    chosen = {p.index for p in picks}
    first = []
    for rank, pick in enumerate(picks, 1):
        note = notes[pick.index]
        why = f": {pick.why}" if pick.why else ""
        reason = f"llm: {model} ranked it {rank} of {len(picks)}{why}"
        first.append(replace(note, reasons=(*note.reasons, reason)))
    rest = [n for i, n in enumerate(notes) if i not in chosen]
    return (*first, *rest)


class Interpreter:
    """Asks the configured endpoint; one instance per app."""

    def __init__(self, settings: LlmSettings) -> None:
        self.settings = settings
        self.name = settings.model

    async def interpret(self, query: str, notes: Sequence[RetrievedNote]) -> Interpreted:
        """``notes`` reordered and annotated by the model, with its confidence and follow-up
        queries; raises TerraceFailed."""
        cfg = self.settings
        head = list(notes[: cfg.candidates])
        prompt, shown = build_prompt(query, head, cfg.prompt_token_budget)
        payload = {
            "model": cfg.model,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": prompt},
            ],
            "max_tokens": cfg.max_tokens,
            "temperature": 0,
        }
        try:
            body = await asyncio.wait_for(
                asyncio.to_thread(self._post, json.dumps(payload).encode()),
                timeout=cfg.timeout_seconds,
            )
        except TimeoutError:
            raise TerraceFailed(f"no answer within {cfg.timeout_seconds:g} s") from None
        answer = parse_reply(body, shown)
        results = (*apply(head, answer.picks, cfg.model), *notes[cfg.candidates :])
        return Interpreted(results, answer.confidence, answer.followups)

    def _post(self, body: bytes) -> bytes:
        cfg = self.settings
        url = urlsplit(cfg.base_url.rstrip("/") + "/chat/completions")
        if url.scheme not in ("http", "https") or not url.hostname:
            raise TerraceFailed("lcma.llm.base_url is not an http(s) URL")
        connection_type = (
            http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
        )
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get(cfg.api_key_env, "") if cfg.api_key_env else ""
        if key:
            headers["Authorization"] = f"Bearer {key}"
        started = time.perf_counter()
        conn = connection_type(url.hostname, url.port, timeout=cfg.timeout_seconds)
        try:
            conn.request("POST", url.path, body=body, headers=headers)
            response = conn.getresponse()
            data = response.read(1_000_000)
        except (OSError, http.client.HTTPException) as exc:
            raise TerraceFailed(f"request failed: {exc!r}") from None
        finally:
            conn.close()
        if response.status != 200:
            raise TerraceFailed(f"HTTP {response.status}")
        log.debug("llm pass answered in %.0f ms", 1000 * (time.perf_counter() - started))
        return data
