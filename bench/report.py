"""Write bench/RESULTS.md and the plots from the JSON that perf.py and eval.py saved.

Every number in RESULTS.md is copied from ``bench/out/perf.json`` and ``bench/out/eval.json``;
nothing is measured or rounded differently here. A missing JSON leaves its section out.

    .venv/bin/python bench/report.py [--out-dir bench/out] [--target bench]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.ticker import ScalarFormatter

from lithos.config import SearchConfig

HERE = Path(__file__).resolve().parent
SECTION_TITLES = {
    "eval": "## Retrieval quality: BEIR SciFact",
    "longmemeval": "## Retrieval quality: LongMemEval-S (development set)",
    "perf": "## Performance: PowerShell docs + tldr pages",
    "load": "## Server cost per call: wrk over streamable HTTP",
    "explore": "## Exploration, analogy and the graph scout, with and without",
    "concepts": "## Concept nodes: formation rule and gateway (SciFact)",
    "analogy": "## The analogy scout on hand-made framed notes",
    "terrace": "## Terrace 2 against a fake model: cost, firing rate, honesty",
    "vector_compact": "## Compact vectors: int8 against float32 search",
    "ingest": "## Bulk ingest: lithos_write_batch and lithos import",
    "scale": "## Scale: 1,000 to 100,000 notes",
    "vector_scale": "## Semantic search at 100,000 notes: sign-bit shortlist",
    "write_latency": "## lithos_write latency in-process, and where its time goes",
}
NOTES_MARK = "<!-- bench/NOTES.md -->"
TOOLS_PLOTTED = ("read", "write_create", "search_fulltext", "search_semantic", "search_hybrid")
# Targets of issue 3, meant for 10,000 real notes: (label, how to read it, limit, unit)
TARGETS = (
    ("full-text search p95", lambda s: s["latency_ms"]["search_fulltext"]["p95"], 20, "ms"),
    (
        "semantic search p95 (embedded)",
        lambda s: s["latency_ms"]["search_semantic"]["p95"],
        50,
        "ms",
    ),
    ("startup with existing indexes", lambda s: s["startup_with_indexes_s"], 3, "s"),
    ("server RSS (max seen)", lambda s: max(_rss(s)), 500, "MB"),
    (
        "hand edit searchable (median, 500 ms debounce)",
        lambda s: s["hand_edit"]["debounce_500ms"]["median_ms"] / 1000,
        1,
        "s",
    ),
)


# Targets of issue 11 at 10,000 notes: (label, how to read it, limit, unit, higher is better).
# A reader returns None when the run did not measure it (an older result file). The bulk
# ingest targets are bench/ingest.py's, in its own section (INGEST_NOTE).
TARGETS_11 = (
    (
        "hybrid p50 / semantic p50, in-process",
        lambda s: _ratio(s, "embedding", "search_in_process_ms", "hybrid", "semantic"),
        1.3,
        "x",
        False,
    ),
    (
        "hybrid p50 / semantic p50, over MCP",
        lambda s: _ratio(s, "latency_ms", None, "search_hybrid", "search_semantic"),
        1.3,
        "x",
        False,
    ),
    (
        "full-text p95, in-process",
        lambda s: _get(s, "embedding", "search_in_process_ms", "fulltext", "p95"),
        2,
        "ms",
        False,
    ),
    (
        "start-up with indexes to the first answered call",
        lambda s: s.get("first_call_with_indexes_s", s["startup_with_indexes_s"]),
        1,
        "s",
        False,
    ),
    (
        "hand edit searchable (median, default debounce)",
        lambda s: _get(s, "hand_edit", "debounce_500ms", "median_ms"),
        200,
        "ms",
        False,
    ),
    ("server RSS (max seen)", lambda s: max(_rss(s)), 350, "MB", False),
)


INGEST_NOTE = (
    "Issue 11's bulk ingest targets (lithos_write_batch through MCP >= 300 notes/s, "
    "`lithos import` >= 1,000 notes/s) are measured by bench/ingest.py: see the bulk ingest "
    "section below."
)


# Targets of issue 8 at 10,000 notes: lithos_retrieve's p95 within twice hybrid search's.
TARGETS_8 = (
    (
        "retrieve p95 / hybrid p95, in-process",
        lambda s: _ratio95(s, ("embedding", "search_in_process_ms"), "retrieve", "hybrid"),
        2,
        "x",
        False,
    ),
    (
        "retrieve p95 / hybrid p95, over MCP",
        lambda s: _ratio95(s, ("latency_ms",), "retrieve", "search_hybrid"),
        2,
        "x",
        False,
    ),
)


def _ratio95(size: dict[str, Any], path: tuple[str, ...], top: str, bottom: str) -> Any:
    upper, lower = _get(size, *path, top, "p95"), _get(size, *path, bottom, "p95")
    return round(upper / lower, 2) if upper and lower else None


def _get(values: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(values, dict) or key not in values:
            return None
        values = values[key]
    return values


def _ratio(size: dict[str, Any], section: str, sub: str | None, top: str, bottom: str) -> Any:
    values = _get(size, section, *([sub] if sub else []))
    a, b = _get(values, top, "p50"), _get(values, bottom, "p50")
    return round(a / b, 2) if a and b else None


def _rss(size: dict[str, Any]) -> list[float]:
    return [size[k] for k in ("rss_mb_loaded", "rss_mb_after_searches", "rss_mb_after_concurrency")]


def machine_section(machine: dict[str, Any]) -> list[str]:
    return [
        f"- Machine: {machine['cpu_model']}, {machine['cores']} cores, "
        f"{machine['memory_gb']} GB RAM, {machine['os']}, Python {machine['python']}",
        f"- Date: {machine['date']}; commit `{machine['commit']}`",
    ]


def table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join("—" if v is None else str(v) for v in row) + " |" for row in rows]
    return [*lines, ""]


def eval_section(result: dict[str, Any]) -> list[str]:
    metrics = ["ndcg@10", "recall@10", "recall@100", "mrr@10"]
    lines = [SECTION_TITLES["eval"], ""]
    lines += machine_section(result["machine"])
    build = result["build"]
    lines += [
        f"- {result['corpus_docs']} abstracts as notes ({build['chunks']} chunks), "
        f"{result['queries']['test']} test / {result['queries']['train']} train queries; "
        f"indexed in {build['index_s']} s, embedded in {build['embed_s']} s "
        f"({build['vectors_from_cache']} vectors from the cache)",
        "",
        "Test queries (the published figures are for the same 300 queries):",
        "",
    ]
    rows = [
        [f"Lithos {mode}", *[values[m] for m in metrics], result["latency_ms_mean"]["test"][mode]]
        for mode, values in result["quality"]["test"].items()
    ]
    rows += [
        [f"published: {name}", *[v.get(m) for m in metrics], None]
        for name, v in result["published"].items()
    ]
    lines += table(["system", *metrics, "mean ms/query"], rows)
    lines += ["Train queries (used for tuning only):", ""]
    lines += table(
        ["mode", *metrics],
        [[m, *[v[k] for k in metrics]] for m, v in result["quality"]["train"].items()],
    )
    tuning = result["fusion_tuning"]
    rules = sorted(tuning["rules"].items(), key=lambda kv: -kv[1]["train"]["ndcg@10"])
    shipped = _shipped_rule()
    lines += [
        f"Hybrid fusion rules, chosen on train nDCG@10 (bench/fusion.py; `{shipped}` is the "
        "shipped default; `convex` = alpha·minmax(BM25) + (1-alpha)·minmax(cosine), `rrf` = "
        "sum of 1/(k + rank)):",
        "",
    ]
    picked = rules[:5] + [
        (n, v) for n, v in rules if n in (shipped, "rrf k=60") and (n, v) not in rules[:5]
    ]
    lines += table(
        ["rule", "train nDCG@10", "test nDCG@10", "test Recall@100", "test MRR@10"],
        [
            [
                n,
                v["train"]["ndcg@10"],
                v["test"]["ndcg@10"],
                v["test"]["recall@100"],
                v["test"]["mrr@10"],
            ]
            for n, v in picked
        ],
    )
    lines += retrieve_section(result)
    agreement = result["mcp_agreement"]
    lines += [
        f"MCP check: {agreement['queries']} test queries through "
        f"{agreement.get('tools', 'lithos_search')} (in-memory client), in every mode, gave "
        f"the same top-10 as the direct service call in "
        f"{agreement['identical_rankings']} of {agreement['calls']} calls.",
        "",
    ]
    return lines


def retrieve_section(result: dict[str, Any]) -> list[str]:
    """lithos_retrieve against hybrid, its calibration grid, and the learning run."""
    if "retrieve_tuning" not in result:
        return []
    test = result["quality"]["test"]
    train = result["quality"]["train"]
    gain = {
        s: q["retrieve"]["ndcg@10"] - q["hybrid"]["ndcg@10"]
        for s, q in (("test", test), ("train", train))
    }
    lines = [
        "### lithos_retrieve",
        "",
        f"retrieve against hybrid, nDCG@10: test {gain['test']:+.4f}, train {gain['train']:+.4f} "
        "(retrieve ran with its shipped `lcma.*` defaults; the learned terms are empty "
        "before any feedback).",
        "",
        "Calibration sensitivity (bench/retrieve_eval.py): the lexical + vector merge alone "
        "(best chunk only, without whole-note similarity and focus) re-scored over a grid; "
        "cosine mapped from [floor, ceiling] to [0, 1], BM25 as bm25 / (bm25 + saturation), "
        "each blended half and half with min-max over the query's candidates; vector share "
        "of the weight. Best on train nDCG@10:",
        "",
    ]
    keys = ["vector_floor", "vector_ceiling", "lexical_saturation", "vector_share"]
    lines += table(
        [*keys, "train nDCG@10", "test nDCG@10"],
        [[r[k] for k in keys] + [r["train"], r["test"]] for r in result["retrieve_tuning"]["top"]],
    )
    learning = result["retrieve_learning"]
    metrics = ["ndcg@10", "recall@10", "mrr@10"]
    lines += [
        f"Learning: every train query retrieved (limit 10) in its own task, completed citing "
        f"the retrieved notes qrels/train.tsv marks relevant ({learning['cited_notes']} "
        "citations; the other returned notes count as ignored); then both splits scored again:",
        "",
    ]
    rows = []
    for split in ("test", "train"):
        for when in ("before", "after"):
            rows.append([split, when, *[learning[when][split][m] for m in metrics]])
    lines += table(["queries", "feedback", *metrics], rows)
    return lines + concepts_section(result)


def concepts_section(result: dict[str, Any]) -> list[str]:
    """Concept nodes as gateways: top 10 with the gateway on and off (bench/concepts_eval.py)."""
    concepts = result.get("concepts")
    if not concepts:
        return []
    metrics = ["ndcg@10", "recall@10", "mrr@10"]
    lines = [
        f"Concepts (after the learning run): {concepts['formed_shipped_rule']} formed by the "
        f"shipped rule, {concepts['formed_permissive_rule']} by a permissive one (pairs cited "
        "together once, clusters from two notes). Top 10 as an agent receives it, a concept "
        "note counting as a non-relevant result, with the gateway and damping on and off:",
        "",
    ]
    rows = []
    for split in ("test", "train"):
        for key, label in (("with_gateway", "on"), ("without_gateway", "off")):
            rows.append([split, label, *[concepts[key][split][m] for m in metrics]])
    return lines + table(["queries", "gateway", *metrics], rows)


def longmemeval_section(result: dict[str, Any]) -> list[str]:
    """Session retrieval per question type, one table per metric, one column per row."""
    lines = [SECTION_TITLES["longmemeval"], ""]
    lines += machine_section(result["machine"])
    build = result["build"]
    load = result.get("load_average")
    lines += [
        f"- {result['questions']} questions, {result['sessions']} session notes "
        f"({build['chunks']} chunks), one folder per question; every search is scoped to its "
        f"question's haystack with path_prefix (bench/longmemeval.py); indexed in "
        f"{build['index_s']} s, embedded in {build['embed_s']} s "
        f"({build['vectors_from_cache']} vectors from the cache)"
        + (f"; load average {load[0]}, {load[1]}, {load[2]}" if load else ""),
        "",
    ]
    rows = result["rows"]
    names = list(rows)
    kinds = list(next(iter(rows.values()))["scores"])
    for metric in ("recall_any@5", "recall_all@5", "ndcg@10"):
        lines += [f"Session {metric}:", ""]
        lines += table(
            ["question type", *names],
            [[kind, *[rows[n]["scores"][kind][metric] for n in names]] for kind in kinds],
        )
    lines += table(
        ["row", "retriever", "lcma overrides", "mean ms/question", "median results"],
        [
            [
                n,
                r["retriever"],
                json.dumps(r["lcma"]) if r["lcma"] else "",
                r["mean_ms"],
                r["returned_median"],
            ]
            for n, r in rows.items()
        ],
    )
    tuning = result.get("retrieve_tuning")
    if tuning and tuning["two_fold"]:
        keys = ["vector_floor", "vector_ceiling", "lexical_saturation", "vector_share"]
        best = tuning["best_on_all"]
        chosen = ", ".join(f"{k} {best[k]}" for k in keys)
        lines += [
            "retrieve's calibration grid (the lexical + vector merge alone, as on SciFact) chosen "
            "on one half of the questions and scored on the other half, both ways; the "
            f"held-out mean is {tuning['held_out_mean']}. Best on all questions (in-sample, "
            f"optimistic): {chosen}, nDCG@10 {best['ndcg@10']}.",
            "",
        ]
        lines += table(
            [*keys, "nDCG@10 on the half it was chosen on", "nDCG@10 held out"],
            [[c[k] for k in keys] + [c["chosen_on"], c["held_out"]] for c in tuning["two_fold"]],
        )
    return lines


def _shipped_rule() -> str:
    config = SearchConfig()
    if config.hybrid_fusion == "convex":
        return f"convex alpha={config.hybrid_alpha:.1f}"
    return f"rrf k={config.rrf_k}"


def _targets(issue: str, targets: Any, largest: dict[str, Any]) -> list[str]:
    lines = [
        f"Targets (issue {issue}, for 10,000 notes), measured at {largest['notes']} notes:",
        "",
    ]
    rows = []
    for label, read, limit, unit, higher in targets:
        value = read(largest)
        if value is None:
            rows.append([label, f"{'>=' if higher else '<'} {limit} {unit}", None, "not measured"])
            continue
        met = value >= limit if higher else value < limit
        rows.append(
            [
                label,
                f"{'>=' if higher else '<'} {limit} {unit}",
                f"{value:g} {unit}",
                "met" if met else "**missed**",
            ]
        )
    return lines + table(["target", "limit", "measured", ""], rows)


def perf_section(result: dict[str, Any]) -> list[str]:
    sizes = result["sizes"]
    lines = [SECTION_TITLES["perf"], ""]
    lines += machine_section(result["machine"])
    lines += ["  (report file written then; each size's own date and commit are in the table)", ""]
    largest = sizes[-1]
    lines += [f"Targets (issue 3, for 10,000 notes), measured at {largest['notes']} notes:", ""]
    rows = []
    for label, read, limit, unit in TARGETS:
        value = read(largest)
        rows.append(
            [
                label,
                f"< {limit} {unit}",
                f"{value:g} {unit}",
                "met" if value < limit else "**missed**",
            ]
        )
    lines += table(["target", "limit", "measured", ""], rows)
    for issue, targets in (("11", TARGETS_11), ("8", TARGETS_8)):
        lines += _targets(issue, targets, largest)
    lines += [INGEST_NOTE, ""]
    lines += ["Ingest, start-up, memory, hand edits:", ""]
    header = ["notes"] + [str(s["notes"]) for s in sizes]
    facts = [
        (
            "measured (date, commit)",
            lambda s: "{date}, `{commit}`".format(**s["measured"]) if "measured" in s else None,
        ),
        ("PowerShell / tldr pages", lambda s: f"{s['powershell_pages']} / {s['tldr_pages']}"),
        (
            "vectors",
            lambda s: (
                "**synthetic** (random unit vectors: latency only; semantic and hybrid "
                "searched with threshold 0, so they return notes as with real vectors)"
                if s["embedding"].get("synthetic_vectors")
                else "all-MiniLM-L6-v2"
            ),
        ),
        (
            "chunks (pending after wait)",
            lambda s: f"{s['index']['chunks']} ({s['index']['pending']})",
        ),
        ("server start-up, no indexes (s)", lambda s: s["startup_no_indexes_s"]),
        (
            "files + full-text ingest, in-process (notes/s)",
            lambda s: s["embedding"]["files_fulltext_notes_per_s"],
        ),
        ("embedding, 2 threads (chunks/s)", lambda s: s["embedding"]["chunks_per_s"]),
        ("lithos_write ingest (notes/s)", lambda s: s["write_ingest"]["notes_per_s"]),
        ("server start-up, indexes present (s)", lambda s: s["startup_with_indexes_s"]),
        (
            "first answered call, indexes present (s; load)",
            lambda s: (
                f"{s['first_call_with_indexes_s']} ({s['load_at_startup']:.1f})"
                if "first_call_with_indexes_s" in s
                else None
            ),
        ),
        (
            "first answered call of a bare FastMCP server, one tool (s; the floor)",
            lambda s: s.get("first_call_floor_s"),
        ),
        (
            "RSS loaded / after searches / after load test (MB)",
            lambda s: " / ".join(str(v) for v in _rss(s)),
        ),
        (
            "hand edit searchable, median ms (500 ms debounce)",
            lambda s: s["hand_edit"]["debounce_500ms"]["median_ms"],
        ),
        (
            "hand edit searchable, median ms (100 ms debounce)",
            lambda s: s["hand_edit"]["debounce_100ms"]["median_ms"],
        ),
    ]
    lines += table(header, [[label, *[read(s) for s in sizes]] for label, read in facts])
    lines += [
        "Latency per tool call through an MCP client over streamable HTTP, p50 / p95 / p99 "
        f"ms ({sizes[0]['latency_ms']['read']['n']} calls each):",
        "",
    ]
    tools = list(dict.fromkeys(t for s in sizes for t in s["latency_ms"]))
    rows = [
        [tool, *[_p(v) if (v := s["latency_ms"].get(tool)) else None for s in sizes]]
        for tool in tools
    ]
    lines += table(["tool"] + [f"{s['notes']} notes" for s in sizes], rows)
    lines += ["Search called in-process on the service (no MCP), p50 / p95 / p99 ms:", ""]
    rows = [
        [
            mode,
            *[
                _p(v) if (v := _get(s, "embedding", "search_in_process_ms", mode)) else None
                for s in sizes
            ],
        ]
        for mode in ("fulltext", "semantic", "hybrid", "retrieve")
    ]
    lines += table(["mode"] + [f"{s['notes']} notes" for s in sizes], rows)
    lines += [
        "Concurrent agent sessions over streamable HTTP (mixed reads, searches, writes, "
        "claim/release, lists; each session bounded by call count and time):",
        "",
    ]
    rows = [
        [s["notes"], c["sessions"], c["calls"], c["seconds"], c["calls_per_s"], c["errors"]]
        for s in sizes
        for c in s["concurrency"]
    ]
    lines += table(["notes", "sessions", "calls", "seconds", "calls/s", "errors"], rows)
    return lines


INGEST_WAYS = (
    ("batch_mcp", "lithos_write_batch over MCP (HTTP), embedding alongside", 300),
    ("batch_mcp_no_embed", "lithos_write_batch over MCP (HTTP), no embedding", 300),
    ("batch_in_process", "write_batch in-process, no MCP, no embedding", None),
    ("import", "`lithos import` of a folder (in-process), no embedding", 1000),
)


def ingest_section(result: dict[str, Any]) -> list[str]:
    """Bulk ingest rates and CPU per note (bench/ingest.py)."""
    lines = [SECTION_TITLES["ingest"], ""]
    lines += machine_section(result["machine"])
    lines += [
        f"- {result['batch_mcp']['notes']} real notes (PowerShell docs + tldr pages), "
        f"{result['batch_size']} per batch call; every way ends with every note searchable by "
        "full text. CPU ms per note is process CPU time (user + system, all threads); notes/s "
        "is wall clock and depends on the load average (other engineers share the 2 cores), "
        "quoted per row.",
        "",
    ]
    rows = []
    for key, label, target in INGEST_WAYS:
        figures = result[key]
        verdict = None
        if target is not None:
            verdict = "met" if figures["notes_per_s"] >= target else "**missed**"
        rows.append(
            [
                label,
                figures["notes_per_s"],
                figures["cpu_ms_per_note"],
                f"{figures['load_average']:.1f}",
                f">= {target}" if target else None,
                verdict,
            ]
        )
    lines += table(["way", "notes/s", "CPU ms/note", "load", "target (notes/s)", ""], rows)
    return lines


WRITE_P95_TARGET_MS = 15  # issue 11: lithos_write p95 at 10,000 notes
WRITE_PATHS = (
    ("background", "background commit (as the server runs)"),
    ("inline", "inline commit (each write waits for its Tantivy commit)"),
)


def write_latency_section(result: dict[str, Any]) -> list[str]:
    """lithos_write p50/p95/p99 and its steps, against the p95 target (bench/write_latency.py)."""
    lines = [SECTION_TITLES["write_latency"], ""]
    lines += machine_section(result["machine"])
    background = result["background"]
    calls = background["create_ms"]["n"]
    lines += [
        f"- Corpus size used: {result['notes']} real notes indexed (PowerShell docs + tldr "
        f"pages), no embedding worker; {calls} creates and {calls} updates of one note each "
        "way, through `KnowledgeService.write` (the call behind `lithos_write`), each followed "
        "by an untimed full-text search for a word only that write holds.",
        f"- Load average before / after: {_loads(result['load_before'])} / "
        f"{_loads(result['load_after'])} (2 cores shared with other work).",
        "",
    ]
    worst = max(background["create_ms"]["p95"], background["update_ms"]["p95"])
    met = worst < WRITE_P95_TARGET_MS
    target_size = "" if result["notes"] >= 10_000 else f" (measured at {result['notes']} notes)"
    lines += table(
        ["target", "limit", "measured (worst of create, update)", ""],
        [
            [
                f"lithos_write p95 at 10,000 notes{target_size}",
                f"< {WRITE_P95_TARGET_MS} ms",
                f"{worst:g} ms",
                "met" if met else "**missed**",
            ]
        ],
    )
    rows = []
    for key, label in WRITE_PATHS:
        figures = result[key]
        rows.append(
            [
                label,
                _p(figures["create_ms"]),
                _p(figures["update_ms"]),
                figures["not_found_right_after"],
                f"{figures['load']:.1f}",
            ]
        )
    header = ["write path", "create p50 / p95 / p99 ms", "update p50 / p95 / p99 ms"]
    lines += table([*header, "not searchable on return", "load"], rows)
    steps = background["median_step_ms"]
    lines += [
        "Median time per write of each step (background commit): "
        + "; ".join(f"{label} {ms} ms" for label, ms in steps.items())
        + ".",
    ]
    return lines


def _loads(values: list[float]) -> str:
    return ", ".join(f"{v:.1f}" for v in values)


def load_section(result: dict[str, Any]) -> list[str]:
    """Server throughput and CPU per call under wrk (bench/load.py)."""
    targets = result["targets"]
    lines = [SECTION_TITLES["load"], ""]
    lines += machine_section(result["machine"])
    load = ", ".join(f"{v:.1f}" for v in result["load_before"])
    lines += [
        f"- {result['notes']} notes ({result['index']['chunks']} chunks, "
        f"{result['index']['pending_chunks']} not embedded); load average before the run "
        f"{load} (other work shares the 2 cores: CPU ms per call is the robust figure, calls/s "
        "and latency are not)",
        "",
        "Server CPU ms per call (user + system of the server process / calls answered) and "
        "its ratio to `bench_noop`, a tool that does nothing (the protocol floor on the same "
        "stack); `ping` is a JSON-RPC ping with no tool. Response mode `sse` is streamable "
        "HTTP's one-event SSE stream per POST, `json` a plain JSON body:",
        "",
    ]
    modes = result["modes"]
    names = list(next(iter(modes.values())))
    rows = []
    for name in names:
        row: list[Any] = [name]
        for mode in modes.values():
            r = mode[name]
            row += [
                f"{r['server_cpu_ms_per_call']} ({r['x_floor']}x)",
                r["calls_per_s"],
                f"{r['p50_ms']} / {r['p99_ms']}",
                r["errors"],
            ]
        rows.append(row)
    header = ["call"]
    for mode in modes:
        header += [f"{mode}: CPU ms (x floor)", f"{mode}: calls/s", f"{mode}: p50/p99 ms", "errors"]
    lines += table(header, rows)
    lines += [
        "Targets (issue 11; meant for 10,000 notes). Lithos answers in `json` mode unless "
        "`server.json_response` is set to false, so the `json` rows are what its clients get; "
        "the `sse` rows hold the same limits for clients that configure SSE, and the floor "
        "tool's own calls/s in each mode (same load generator, one tool) is shown beside the "
        "mixed load:",
        "",
    ]
    rows = []
    for mode_name, mode in modes.items():
        mixed = mode["mixed"]
        ok = mixed["calls_per_s"] >= targets["mixed_calls_per_s"] and mixed["errors"] == 0
        rows.append(
            [
                f"{mode_name}: mixed read/search/claim calls/s, zero errors",
                f">= {targets['mixed_calls_per_s']}",
                f"{mixed['calls_per_s']} ({mixed['errors']} errors; "
                f"floor tool alone {mode['floor (bench_noop)']['calls_per_s']})",
                "met" if ok else "**missed**",
            ]
        )
        for name in targets["near_floor"]:
            ratio = mode[name]["x_floor"]
            ok = ratio is not None and ratio <= targets["floor_ratio"]
            rows.append(
                [
                    f"{mode_name}: {name} server CPU vs floor",
                    f"<= {targets['floor_ratio']}x",
                    f"{ratio}x",
                    "met" if ok else "**missed**",
                ]
            )
    lines += table(["target", "limit", "measured", ""], rows)
    return lines


def vector_compact_section(result: dict[str, Any]) -> list[str]:
    """bench/vector_compact.py: recall, memory and latency of int8 rows against float32."""
    lines = [SECTION_TITLES["vector_compact"], "", *machine_section(result["machine"])]
    lines += [
        "",
        "The same vector store read with float32 rows and with int8 rows (one scale per row) "
        "plus a float32 re-score of the best `limit + 40` rows from SQLite "
        "(`search.compact_vectors`). Recall@10 is the share of the exact float32 top 10 the "
        "compact search returns. Latency: `rank_notes(limit=10)` per query, median (p90); "
        "load average as measured (2 cores, shared).",
        "",
    ]
    rows = []
    for name, label in (
        ("scifact", "SciFact, real vectors"),
        ("synthetic_100000", "100,000 synthetic vectors"),
        ("synthetic_10000", "10,000 synthetic vectors"),
    ):
        row = result.get(name)
        if row is None:
            continue
        exact, compact = row["float32"], row["int8"]
        rows.append(
            [
                f"{label} ({row['chunks']} chunks, {row['queries']} queries)",
                f"{row['recall_at_10_notes']} / {row['recall_at_10_chunks']}",
                round(row["recall_at_10_chunks_int8_without_rescore"], 4),
                f"{exact['matrix_mb']} -> {compact['matrix_mb']}",
                f"+{exact['rss_growth_mb']} -> +{compact['rss_growth_mb']}",
                f"{_median_p90(exact['rank_notes_ms'])} -> {_median_p90(compact['rank_notes_ms'])}",
                " / ".join(f"{x:.1f}" for x in row["load_average"]),
            ]
        )
    header = [
        "data",
        "recall@10 notes / chunks",
        "int8 alone, chunks",
        "matrix MB",
        "RSS growth on load, MB",
        "ms float32 -> int8",
        "load (1/5/15 min)",
    ]
    return [*lines, *table(header, rows)]


# Targets of issue 11 at 100,000 notes: (label, how to read it, limit, unit).
TARGETS_SCALE = (
    ("full-text p95, in-process", lambda s: s["latency_ms"]["fulltext"]["p95"], 5, "ms"),
    ("semantic p95, in-process", lambda s: s["latency_ms"]["semantic"]["p95"], 30, "ms"),
    (
        "start-up with indexes to the first answered call",
        lambda s: s["first_call_with_indexes_s"],
        3,
        "s",
    ),
    ("server RSS after a round of every tool", lambda s: s["rss_mb_after_calls"], 1024, "MB"),
)
# "Writes unchanged": lithos_write p95 at 100,000 notes within this factor of 10,000's.
WRITES_UNCHANGED = 1.5


def _dominant(phases: dict[str, float]) -> str:
    name, value = max(phases.items(), key=lambda item: item[1])
    total = sum(max(0.0, v) for v in phases.values())
    return f"{name.replace('_', ' ')} ({value:g} of {total:.3g} ms)"


def scale_section(result: dict[str, Any]) -> list[str]:
    """bench/scale.py: the composed corpus at each size, targets at 100,000 notes."""
    sizes = result["sizes"]
    lines = [SECTION_TITLES["scale"], "", *machine_section(result["machine"])]
    lines += [
        "- Commit and date of each size: "
        + "; ".join(
            f"{s['notes']}: `{s['measured']['commit']}` {s['measured']['date']}" for s in sizes
        ),
        "",
        "Notes composed from the real corpora's text (bench/scale_corpus.py: PowerShell "
        "sections, tldr pages and SciFact abstracts, 1-3 pieces a note, unique titles), loaded "
        "with `lithos import`. **Vectors are synthetic** (random unit vectors, one per chunk): "
        "latency depends on their number and dimension only; the query is embedded by the "
        "real model. Search latencies are in-process (`SearchService.search`, semantic and "
        "hybrid with threshold 0 so each returns 10 notes); start-up and memory are those of "
        "`lithos serve --transport http`; writes are `KnowledgeService.write` creates "
        "(bench/write_latency.py). The load average (2 shared cores) is given per row.",
        "",
    ]
    rows = []
    for s in sizes:
        latency, write = s["latency_ms"], s["write"]["create_ms"]
        rows.append(
            [
                s["notes"],
                s["chunks"],
                f"{s['import']['import_notes_per_s']} ({s['import']['import_cpu_ms_per_note']})",
                f"{latency['fulltext']['p50']} / {latency['fulltext']['p95']}",
                f"{latency['semantic']['p50']} / {latency['semantic']['p95']}",
                f"{latency['hybrid']['p50']} / {latency['hybrid']['p95']}",
                f"{write['p50']} / {write['p95']}",
                s["first_call_with_indexes_s"],
                f"{s['rss_mb_started']} / {s['rss_mb_after_calls']}",
                f"{s['import']['load_at_import']} / {s['load_at_searches']} / "
                f"{s['load_at_startup']}",
            ]
        )
    header = [
        "notes",
        "chunks",
        "import notes/s (CPU ms/note)",
        "full-text p50 / p95 ms",
        "semantic p50 / p95 ms",
        "hybrid p50 / p95 ms",
        "write p50 / p95 ms",
        "first call s",
        "RSS MB started / after calls",
        "load: import / searches / start-up",
    ]
    lines += table(header, rows)
    lines += ["", "What dominates each search (median ms of each phase, in-process):", ""]
    dominant = []
    for s in sizes:
        phases = s["phases_median_ms"]
        dominant.append(
            [
                s["notes"],
                _dominant(phases["fulltext"]),
                _dominant(phases["semantic"]),
                f"{s['matrix_mb']} MB, read in {s['matrix_load_s']} s",
            ]
        )
    lines += table(["notes", "full-text", "semantic", "vector matrix"], dominant)
    largest = sizes[-1]
    if largest["notes"] < 100_000:
        return lines
    lines += ["", f"Targets (issue 11, for 100,000 notes), measured at {largest['notes']}:", ""]
    rows = []
    for label, read, limit, unit in TARGETS_SCALE:
        value = read(largest)
        verdict = "met" if value < limit else "**missed**"
        rows.append([label, f"< {limit} {unit}", f"{value:g} {unit}", verdict])
    tenk = next((s for s in sizes if s["notes"] == 10_000), None)
    if tenk is not None:
        ratio = largest["write"]["create_ms"]["p95"] / tenk["write"]["create_ms"]["p95"]
        verdict = "met" if ratio <= WRITES_UNCHANGED else "**missed**"
        rows.append(
            [
                "lithos_write p95 unchanged from 10,000 notes",
                f"<= {WRITES_UNCHANGED}x",
                f"{ratio:.2f}x ({tenk['write']['create_ms']['p95']} -> "
                f"{largest['write']['create_ms']['p95']} ms)",
                verdict,
            ]
        )
    return lines + table(["target", "limit", "measured", ""], rows)


def plot_scale(result: dict[str, Any], target: Path) -> None:
    sizes = result["sizes"]
    xs = [s["notes"] for s in sizes]
    panels = (
        (
            "search p95, in-process (ms)",
            {
                "full-text": [s["latency_ms"]["fulltext"]["p95"] for s in sizes],
                "semantic": [s["latency_ms"]["semantic"]["p95"] for s in sizes],
                "hybrid": [s["latency_ms"]["hybrid"]["p95"] for s in sizes],
            },
            (5, 30),
        ),
        (
            "first answered call with indexes (s)",
            {
                "start-up": [s["first_call_with_indexes_s"] for s in sizes],
            },
            (3,),
        ),
        ("server RSS after calls (MB)", {"RSS": [s["rss_mb_after_calls"] for s in sizes]}, (1024,)),
        (
            "lithos_write create, in-process (ms)",
            {
                "p50": [s["write"]["create_ms"]["p50"] for s in sizes],
                "p95": [s["write"]["create_ms"]["p95"] for s in sizes],
            },
            (),
        ),
    )
    fig, axes = plt.subplots(2, 2, figsize=(9, 6))
    for ax, (title, series, limits) in zip(axes.flat, panels, strict=True):
        for label, ys in series.items():
            ax.plot(xs, ys, marker="o", label=label)
        for limit in limits:
            ax.axhline(limit, color="grey", linestyle="--", linewidth=0.8)
        ax.set(title=title, xscale="log", xlabel="notes")
        ax.set_title(title, fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Lithos against corpus size (dashed: targets at 100,000 notes)", fontsize=10)
    fig.tight_layout()
    fig.savefig(target, dpi=110)
    plt.close(fig)


def vector_scale_section(result: dict[str, Any]) -> list[str]:
    """bench/vector_scale.py: exact int8 scoring against the sign-bit shortlist."""
    lines = [SECTION_TITLES["vector_scale"], "", *machine_section(result["machine"])]
    lines += [
        "",
        "One vector store file opened three ways: every row scored in float32 (the exact "
        "reference), every row scored from int8 codes (best re-scored from SQLite), and "
        f"the sign-bit shortlist (at least {result['shortlist_minimum']} rows, or one in 64, "
        "scored from int8, best re-scored). Recall@10 against float32, of `rank_notes(10)` "
        "(notes) and `rank(40)` (chunks); latency of `rank_notes(10)`, the ways interleaved "
        "query by query. Real: every cached all-MiniLM-L6-v2 chunk vector, queried with "
        "SciFact test claims; synthetic: random unit vectors at the 100,000-note corpus's "
        "chunk count, queried with noisy copies of stored ones (no structure: their recall "
        "is a worst case, their latency is what counts).",
        "",
    ]
    rows = []
    for data, label in (("real", "real vectors"), ("synthetic", "synthetic vectors")):
        row = result.get(data)
        if row is None:
            continue
        for way in ("float32", "int8", "shortlist"):
            figures = row[way]
            rows.append(
                [
                    f"{label} ({row['chunks']} chunks, {row['queries']} queries)",
                    way,
                    f"{figures['recall_at_10_notes']} / {figures['recall_at_10_chunks']}",
                    f"{figures['rank_notes_ms']['p50']} / {figures['rank_notes_ms']['p95']}",
                    figures["matrix_mb"],
                    " -> ".join(f"{x:.1f}" for x in row["load_average"]),
                ]
            )
    header = ["data", "way", "recall@10 notes / chunks", "p50 / p95 ms", "matrix MB", "load"]
    return [*lines, *table(header, rows)]


def _median_p90(values: dict[str, float]) -> str:
    return f"{values['median']} ({values['p90']})"


def _p(values: dict[str, float]) -> str:
    return f"{values['p50']} / {values['p95']} / {values['p99']}"


def plot_latency(result: dict[str, Any], target: Path) -> None:
    sizes = result["sizes"]
    xs = [s["notes"] for s in sizes]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for tool in TOOLS_PLOTTED:
        ax.plot(xs, [s["latency_ms"][tool]["p95"] for s in sizes], marker="o", label=tool)
    ax.set(
        xlabel="notes in the knowledge base",
        ylabel="p95 latency (ms, MCP over HTTP)",
        title="Lithos tool latency vs corpus size",
        xscale="log",
        yscale="log",
    )
    for limit, label in ((20, "full-text p95 target"), (50, "semantic p95 target")):
        ax.axhline(limit, color="grey", linestyle="--", linewidth=0.8)
        ax.annotate(label, (xs[0], limit), fontsize=7, color="grey", va="bottom")
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(target, dpi=110)
    plt.close(fig)


def plot_quality(result: dict[str, Any], target: Path) -> None:
    names = [f"Lithos {m}" for m in result["quality"]["test"]] + list(result["published"])
    values = list(result["quality"]["test"].values()) + list(result["published"].values())
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for offset, metric in ((-0.2, "ndcg@10"), (0.2, "recall@100")):
        heights = [v.get(metric, 0) for v in values]
        ax.bar([i + offset for i in range(len(names))], heights, width=0.4, label=metric)
    ax.set_xticks(range(len(names)), names, rotation=25, ha="right", fontsize=8)
    ax.set(ylim=(0, 1.15), title="SciFact test quality per mode")
    ax.legend(loc="upper center", ncol=2)
    fig.tight_layout()
    fig.savefig(target, dpi=110)
    plt.close(fig)


def explore_section(result: dict[str, Any]) -> list[str]:
    """bench/explore_eval.py: explore's features with and without themselves, at limit 10."""
    lines = [SECTION_TITLES["explore"], ""]
    lines += machine_section(result["machine"])
    load = result.get("load_average")
    lines += [
        f"- `lithos_retrieve` at limit {result['limit']}, each row with the `lcma` settings "
        "shown (bench/explore_eval.py); `changed` is how many queries' results differ from "
        "the defaults row's; temperature is the mean over the queries, hot the "
        "share above `exploration.threshold`"
        + (f"; load average {load[0]}, {load[1]}, {load[2]}" if load else ""),
        "",
    ]

    def rows_table(title: str, rows: dict[str, Any]) -> list[str]:
        metrics = list(next(iter(rows.values()))["scores"])
        changed = ["changed"] if all("changed" in r for r in rows.values()) else []
        out = [title, ""]
        out += table(
            ["row", "lcma overrides", *metrics, *changed, "temperature", "hot", "median ms"],
            [
                [
                    name,
                    json.dumps(r["lcma"]) if r["lcma"] else "",
                    *[r["scores"][m] for m in metrics],
                    *[r[c] for c in changed],
                    r["temperature_mean"],
                    r["hot_share"],
                    r["median_ms"],
                ]
                for name, r in rows.items()
            ],
        )
        return out

    scifact = result.get("scifact")
    if scifact:
        count = f"{scifact['corpus_docs']} abstracts, {scifact['test_queries']} test queries"
        lines += _run_line(scifact)
        lines += rows_table(f"SciFact ({count}), before any feedback:", scifact["before_feedback"])
        feedback = scifact["feedback"]
        lines += rows_table(
            f"SciFact after feedback on the train queries ({feedback['cited_notes']} citations, "
            f"{feedback['edges']} typed edges):",
            scifact["after_feedback"],
        )
        learned = scifact.get("scout_weights")
        if learned:
            lines += [
                "Exploration weights the feedback taught (each from its `scout_weights` value):",
                "",
            ]
            lines += table(
                ["scout", "query class", "weight", "cited", "ignored", "misleading"],
                [
                    [
                        w["scout"],
                        w["query_class"],
                        round(w["weight"], 4),
                        w["cited"],
                        w["ignored"],
                        w["misleading"],
                    ]
                    for w in learned
                ],
            )
        lines += concepts_section(scifact)
    lme = result.get("longmemeval")
    if lme:
        lines += _run_line(lme)
        lines += rows_table(f"LongMemEval-S ({lme['questions']} questions, overall):", lme["rows"])
    return lines


def _run_line(data_set: dict[str, Any]) -> list[str]:
    """When and on what commit one data set of a merged result ran, with its load."""
    run = data_set.get("run")
    if not run:
        return []
    machine = run["machine"]
    return [f"Run {machine['date']}, commit `{machine['commit']}`, {_load_line(run)}.", ""]


def _load_line(result: dict[str, Any]) -> str:
    load = result.get("load_average")
    return f"load average {load[0]}, {load[1]}, {load[2]}" if load else "load not recorded"


def concepts_grid_section(result: dict[str, Any]) -> list[str]:
    """bench/concepts_eval.py: each formation rule from the same feedback, both splits."""
    sys.path.insert(0, str(HERE.parent))
    from bench import concepts_eval

    lines = [SECTION_TITLES["concepts"], ""]
    lines += machine_section(result["machine"])
    lines += [
        f"- {result['corpus_docs']} abstracts; feedback on {result['queries']['train']} train "
        f"queries cited {result['cited_notes']} abstracts; each rule forms its concepts from "
        "that feedback, then both splits are retrieved at limit 10 as an agent receives them "
        "(a concept note counts as non-relevant); `concept shown` is the share of queries "
        f"with a concept in the top 10; {_load_line(result)}",
        f"- Rule chosen on train nDCG@10 (a tie goes to the stricter, shipped first): "
        f"{concepts_eval.choose(result['rows'])}",
        f"- {_against_none(result['rows'], concepts_eval.choose(result['rows']))}",
        "",
    ]
    metrics = ["ndcg@10", "recall@10", "mrr@10", "concept_shown"]
    rows = []
    for name, row in result["rows"].items():
        rule = json.dumps(row["rule"]) if row["rule"] else ("" if row["rule"] is None else "{}")
        for split in ("train", "test"):
            rows.append(
                [name, rule, row["formed"], row["members"], split]
                + [row[split][m] for m in metrics]
            )
    return lines + table(["rule", "overrides", "concepts", "members", "queries", *metrics], rows)


def _against_none(rows: dict[str, Any], chosen: str) -> str:
    """The chosen rule against no concepts at all, on both splits."""
    none, best = rows["no concepts"], rows[chosen]
    pairs = ", ".join(
        f"{split} {best[split]['ndcg@10']} against {none[split]['ndcg@10']}"
        for split in ("train", "test")
    )
    helps = all(best[s]["ndcg@10"] > none[s]["ndcg@10"] for s in ("train", "test"))
    verdict = "helps" if helps else "does not beat no concepts on both splits"
    return f"Chosen rule against no concepts, nDCG@10: {pairs}: {verdict}"


def analogy_section(result: dict[str, Any]) -> list[str]:
    """bench/analogy_eval.py: scout_analogy weights on the hand-made framed notes."""
    lines = [SECTION_TITLES["analogy"], ""]
    lines += machine_section(result["machine"])
    lines += [
        f"- {result['fixture_notes']} hand-made notes (tests/fixtures/analogy: 30 postmortems "
        f"in 10 families, 10 topical distractors; {result['framed_notes']} framed) among "
        f"{result['background_pages']} real tldr pages; {result['queries']['tune']} tune and "
        f"{result['queries']['test']} test queries, all three members of a family relevant; "
        "`analogues@10` is the share of the two off-topic members found; limit 10; "
        f"{_load_line(result)}",
        f"- Weight chosen on the tune queries: {result['chosen_on_tune']}",
        "",
    ]
    metrics = ["ndcg@10", "recall@10", "analogues@10"]
    rows = []
    for row in result["rows"].values():
        for split in ("tune", "test"):
            rows.append([row["scout_analogy"], split, *[row[split][m] for m in metrics]])
    return lines + table(["scout_analogy", "queries", *metrics], rows)


def terrace_section(result: dict[str, Any]) -> list[str]:
    """bench/terrace_eval.py: Terrace 2's overhead and firing rate against a fake model."""
    lines = [SECTION_TITLES["terrace"], ""]
    lines += machine_section(result["machine"])
    lines += [
        "- A fake OpenAI-compatible endpoint in the benchmark process answers at once (the "
        f"notes reversed) and fails every {result['fail_every']}th request with HTTP 500; "
        f"limit {result['limit']}; latency medians (p90) in ms; prompt tokens are characters "
        f"/ 4; {_load_line(result)}",
        "",
    ]
    rows = []
    for name in ("scifact", "longmemeval"):
        r = result.get(name)
        if not r:
            continue
        heat = r["temperature"]
        rows.append(
            [
                name,
                r["queries"],
                f"{r['asked_share']:.1%}",
                ", ".join(f"{c} {v}" for c, v in r["asked_by_class"].items()),
                f"{r['latency_ms_off']['median']} ({r['latency_ms_off']['p90']})",
                f"{r['latency_ms_on']['median']} ({r['latency_ms_on']['p90']})",
                f"{r['prompt_tokens'].get('median', '—')} ({r['prompt_tokens'].get('p90', '—')})",
                f"{r['terrace_reached']} / {r['planted_failures']} failed / "
                f"{r['terrace_reached_wrong']} wrong",
                f"{heat['mean']} [{heat['min']}, {heat['max']}]",
                ", ".join(f">{t}: {v:.0%}" for t, v in r["hot_share_at"].items()),
            ]
        )
    return lines + table(
        [
            "data",
            "queries",
            "sent to the model",
            "by class (sent/all)",
            "ms off",
            "ms on",
            "prompt tokens",
            "terrace_reached / planted failures / wrong",
            "temperature mean [min, max]",
            "share hotter than",
        ],
        rows,
    )


def _previous_sections(path: Path) -> dict[str, list[str]]:
    """The ``## `` sections of an existing RESULTS.md by title, without the notes."""
    if not path.exists():
        return {}
    text = path.read_text()
    text = text.split(NOTES_MARK)[0]
    notes = HERE / "NOTES.md"
    if notes.exists():  # a file written before the mark existed ends with the notes
        first = notes.read_text().strip().splitlines()[0]
        text = text.split(first)[0]
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("## "):
            current = sections.setdefault(line, [])
        if current is not None:
            current.append(line)
    return sections


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out-dir", type=Path, default=HERE / "out")
    parser.add_argument("--target", type=Path, default=HERE)
    args = parser.parse_args(argv)
    lines = [
        "# Lithos benchmark results",
        "",
        "Generated by `bench/report.py` from the JSON the runs wrote; do not edit by hand.",
        "Reproduce: `make eval` (SciFact quality) and `make bench` (performance); each ends by "
        "rewriting this file and the plots. Vectors are cached in `bench/.cache/` keyed by "
        "model and chunk-text hash, so only the first run pays for embedding.",
        "",
    ]
    kept = _previous_sections(args.target / "RESULTS.md")
    found = False
    for name, section, plot in (
        ("eval", eval_section, plot_quality),
        ("longmemeval", longmemeval_section, None),
        ("perf", perf_section, plot_latency),
        ("load", load_section, None),
        ("explore", explore_section, None),
        ("concepts", concepts_grid_section, None),
        ("analogy", analogy_section, None),
        ("terrace", terrace_section, None),
        ("vector_compact", vector_compact_section, None),
        ("ingest", ingest_section, None),
        ("scale", scale_section, plot_scale),
        ("vector_scale", vector_scale_section, None),
        ("write_latency", write_latency_section, None),
    ):
        path = args.out_dir / f"{name}.json"
        if not path.exists():
            path = args.out_dir / f"{name}-quick.json"  # a --quick run, when no full one exists
        if not path.exists():
            # Not re-run: keep what RESULTS.md said, so one benchmark can be re-run alone.
            lines += kept.get(SECTION_TITLES[name], [])
            continue
        found = True
        result = json.loads(path.read_text())
        lines += section(result)
        if plot is not None:
            image = {"eval": "quality.png", "scale": "scale.png"}.get(name, "latency.png")
            plot(result, args.target / image)
            lines += [f"![{name}]({image})"]
        lines += [""]
    notes = HERE / "NOTES.md"
    if notes.exists():
        lines += [NOTES_MARK, notes.read_text().strip(), ""]
    if not found:
        print(f"no results in {args.out_dir}", file=sys.stderr)
        return 1
    (args.target / "RESULTS.md").write_text("\n".join(lines))
    print(f"wrote {args.target / 'RESULTS.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
