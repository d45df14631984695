"""Terrace 2 without a model: what it costs, how often it would run, and whether
``terrace_reached`` tells the truth.

Answer quality needs a real model and cannot be measured offline. What can be: a fake
OpenAI-compatible endpoint on the loopback interface (a thread of this process) answers every
request at once with the notes it was shown in reverse order, and fails every
:data:`FAIL_EVERY`-th request with HTTP 500. On SciFact's test queries and the LongMemEval-S
questions, each query is retrieved with ``lcma.llm`` off and on (limit 10). Reported:

- how often :func:`should_use_llm_pass` sends a query to the model (the endpoint's requests),
  by query class, and how often it would at other temperature thresholds;
- latency with and without the pass (median, p90; the fake answers at once, so the difference
  is Lithos's own overhead: the extra conflict lookup, prompt, HTTP round trip and parsing);
- the prompt size in estimated tokens (characters / 4, as the budget counts) and notes shown;
- ``terrace_reached`` against what the endpoint saw: 2 exactly when the model was asked and
  answered, 1 otherwise, and a failed request reported as degraded with ``terrace_2`` failed.

    .venv/bin/python bench/terrace_eval.py             # bench/out/terrace.json
    .venv/bin/python bench/terrace_eval.py --quick --out /tmp/x
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import harness, longmemeval, scifact
from bench.harness import LIMIT, overridden
from bench.machine import log
from lithos.app import LithosApp
from lithos.domain.retrieval import RetrievalQuery, classify_query
from lithos.retrieval.terrace import TERRACE_TWO

FAIL_EVERY = 7  # every 7th request to the fake model fails with HTTP 500
THRESHOLDS = (0.6, 0.7, 0.8, 0.85, 0.9)
_SHOWN = re.compile(r"^\[(\d+)\] ", re.MULTILINE)


@dataclass
class FakeModel:
    """An OpenAI-compatible endpoint that reverses the notes it is shown."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, request: dict[str, Any], headers: dict[str, str]) -> tuple[int, bytes]:
        prompt = request["messages"][-1]["content"]
        shown = len(_SHOWN.findall(prompt))
        query = prompt.split("\n", 1)[0].removeprefix("Query: ")
        with self.lock:
            number = len(self.requests) + 1
            failed = number % FAIL_EVERY == 0
            self.requests.append(
                {"query": query, "chars": len(prompt), "shown": shown, "failed": failed}
            )
        if failed:
            return 500, b'{"error": "planted failure"}'
        ranking = [{"n": n, "why": "reversed"} for n in range(shown, 0, -1)]
        content = json.dumps({"ranking": ranking, "confidence": 0.9, "followups": []})
        body = {"choices": [{"message": {"role": "assistant", "content": content}}]}
        return 200, json.dumps(body).encode()


Answer = Callable[[dict[str, Any], dict[str, str]], tuple[int, bytes]]


@contextmanager
def serving(answer: Answer) -> Iterator[str]:
    """A chat completions endpoint on the loopback interface, in a thread: ``answer`` gets
    each request's JSON body and headers and returns the status and body. Yields its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            status, body = answer(json.loads(self.rfile.read(length)), dict(self.headers))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def _quantiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return {"median": round(statistics.median(ordered), 2), "p90": round(p90, 2)}


def measure(app: LithosApp, requests: Mapping[str, RetrievalQuery]) -> dict[str, Any]:
    """Every query with the pass off, then on against the fake endpoint."""
    harness.warm(app, requests)
    off: list[float] = []
    temperatures: dict[str, float] = {}
    for qid, got, ms in harness.timed(app, requests):
        off.append(ms)
        temperatures[qid] = got.temperature
    fake = FakeModel()
    on: list[float] = []
    wrong: list[str] = []
    reached: Counter[int] = Counter()
    asked_by_class: Counter[str] = Counter()
    classes: Counter[str] = Counter(classify_query(r.query) for r in requests.values())
    with serving(fake.answer) as url:
        settings = {"enabled": True, "base_url": url, "model": "fake", "timeout_seconds": 10.0}
        with overridden(app, {"llm": settings}):
            before = 0
            for qid, got, ms in harness.timed(app, requests):
                on.append(ms)
                mine, before = fake.requests[before:], len(fake.requests)
                answered = bool(mine) and not any(r["failed"] for r in mine)
                failed = any(r["failed"] for r in mine)
                reached[got.terrace_reached] += 1
                if mine:
                    asked_by_class[classify_query(requests[qid].query)] += 1
                truthful = got.terrace_reached == (2 if answered else 1) and (
                    failed == (got.degraded and TERRACE_TWO in got.failed_scouts)
                )
                if not truthful:
                    wrong.append(requests[qid].query)
    asked = [r for r in fake.requests]
    heat = list(temperatures.values())
    return {
        "queries": len(requests),
        "model_requests": len(asked),
        "planted_failures": sum(r["failed"] for r in asked),
        "asked_share": round(len({r["query"] for r in asked}) / len(requests), 4),
        "asked_by_class": {c: f"{asked_by_class[c]}/{n}" for c, n in sorted(classes.items())},
        "terrace_reached": {str(k): v for k, v in sorted(reached.items())},
        "terrace_reached_wrong": len(wrong),
        "wrong_examples": wrong[:3],
        "latency_ms_off": _quantiles(off),
        "latency_ms_on": _quantiles(on),
        "prompt_tokens": _quantiles([r["chars"] / 4 for r in asked]) if asked else {},
        "notes_shown": _quantiles([float(r["shown"]) for r in asked]) if asked else {},
        "temperature": {
            "mean": round(statistics.fmean(heat), 4),
            "min": round(min(heat), 4),
            "max": round(max(heat), 4),
        },
        "hot_share_at": {
            str(t): round(sum(h > t for h in heat) / len(heat), 4) for t in THRESHOLDS
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = harness.arguments(__doc__, quick="small slices of both data sets")
    parser.add_argument(
        "--lme-per-type", type=int, default=3, help="LongMemEval: first N questions per type"
    )
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"quick": args.quick, "limit": LIMIT, "fail_every": FAIL_EVERY}

    data = harness.scifact_data(args.quick)
    tests = {q: RetrievalQuery(data.queries[q], limit=LIMIT) for q in data.qrels["test"]}
    write = partial(scifact.write_notes, data)
    with harness.knowledge_base(write, not args.no_cache, "lithos-terrace-") as (app, _):
        result["scifact"] = measure(app, tests)
    log(f"scifact: {result['scifact']}")

    base = longmemeval.Haystacks.load(args.quick, args.lme_per_type)
    with harness.knowledge_base(base.write, not args.no_cache, "lithos-terrace-") as (app, _):
        result["longmemeval"] = measure(app, base.requests())
    log(f"longmemeval: {result['longmemeval']}")
    return harness.finish(args, "terrace", result)


if __name__ == "__main__":
    sys.exit(main())
