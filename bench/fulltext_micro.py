"""Micro-benchmark of the Tantivy full-text index: bulk indexing, single writes, BM25 queries.

Builds ~2 KB notes from the tldr-pages corpus (read-only; unpacked into a temporary directory),
indexes them in one batch, then times single-note upserts (one commit each, as the server does),
``hashes()`` and searches with snippets. Run from the repository root:

    .venv/bin/python bench/fulltext_micro.py --docs 10000 --queries 200
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import resource
import statistics
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from lithos.store import fulltext
from lithos.store.fulltext import FullTextDoc, FullTextIndex

CORPUS = Path("/work/shared/data/tldr-pages-en.tar.gz")
DOC_CHARS = 2000


def load_pages(archive: Path, into: Path) -> list[tuple[str, str, str]]:
    """``(platform, name, text)`` for every tldr page, unpacked from ``archive`` into ``into``."""
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    pages = []
    for page in sorted(into.glob("pages/*/*.md")):
        pages.append((page.parent.name, page.stem, page.read_text(encoding="utf-8")))
    return pages


def build_docs(pages: list[tuple[str, str, str]], count: int) -> list[FullTextDoc]:
    """``count`` notes of about DOC_CHARS characters, each a run of consecutive pages."""
    docs, cursor = [], 0
    for i in range(count):
        first_platform, first_name, _ = pages[cursor % len(pages)]
        parts: list[str] = []
        while sum(len(part) for part in parts) < DOC_CHARS:
            parts.append(pages[cursor % len(pages)][2])
            cursor += 1
        docs.append(
            FullTextDoc(
                id=f"doc-{i}",
                title=first_name,
                content="\n\n".join(parts),
                path=f"{first_platform}/{first_name}-{i}.md",
                author=f"agent-{i % 7}",
                tags=(first_platform,),
                content_hash=f"h{i}",
                updated_at="2025-01-01T00:00:00+00:00",
            )
        )
    return docs


def build_queries(pages: list[tuple[str, str, str]], count: int, seed: int) -> list[str]:
    """Two or three words from the description line of random pages, like an agent's query."""
    rng = random.Random(seed)
    queries = []
    while len(queries) < count:
        _, _, text = rng.choice(pages)
        description = next((line[2:] for line in text.splitlines() if line.startswith("> ")), "")
        words = [w.strip(".,`()") for w in description.split() if len(w) > 3]
        if len(words) >= 3:
            queries.append(" ".join(rng.sample(words, rng.choice((2, 3)))))
    return queries


def timed_ms(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1000


def summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    return f"median {statistics.median(ordered):.2f} ms, p95 {p95:.2f} ms (n={len(ordered)})"


def run(docs_count: int, queries_count: int, heap_mb: int, threads: int) -> None:
    fulltext.WRITER_HEAP_BYTES = heap_mb * 1_000_000
    fulltext.WRITER_THREADS = threads
    with tempfile.TemporaryDirectory() as scratch:
        pages = load_pages(CORPUS, Path(scratch) / "corpus")
        docs = build_docs(pages, docs_count)
        queries = build_queries(pages, queries_count, seed=7)
        mean_chars = statistics.mean(len(doc.content) for doc in docs)
        print(f"machine: {platform.processor() or platform.machine()}, {_cpus()} cores")
        print(f"writer: {heap_mb} MB heap, {threads} thread(s)")
        print(f"corpus: {len(docs)} notes, mean {mean_chars:.0f} chars, {len(queries)} queries")
        before_mb = _peak_rss_mb()
        with FullTextIndex(Path(scratch) / "index") as index:
            bulk = timed_ms(lambda: index.upsert(docs))
            print(f"bulk upsert (one commit): {bulk / 1000:.2f} s, {len(docs) / bulk * 1000:.0f}/s")
            writes = [timed_ms(lambda d=doc: index.upsert([d])) for doc in docs[:50]]
            print(f"single-note upsert (commit + reload): {summary(writes)}")
            print(f"hashes() of {index.count()} notes: {timed_ms(index.hashes):.0f} ms")
            for query in queries[:10]:
                index.search(query)
            plain = [timed_ms(lambda q=q: index.search(q, limit=10)) for q in queries]
            print(f"search limit=10 with snippets: {summary(plain)}")
            tagged = [timed_ms(lambda q=q: index.search(q, tags=["linux"])) for q in queries]
            print(f"search + tag filter: {summary(tagged)}")
            prefixed = [
                timed_ms(lambda q=q: index.search(q, path_prefix="common/")) for q in queries
            ]
            print(f"search + path_prefix filter: {summary(prefixed)}")
        print(f"peak RSS: {before_mb:.0f} MB before indexing, {_peak_rss_mb():.0f} MB after")


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpus() -> int:
    return len(os.sched_getaffinity(0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--heap-mb", type=int, default=fulltext.WRITER_HEAP_BYTES // 1_000_000)
    parser.add_argument("--threads", type=int, default=fulltext.WRITER_THREADS)
    args = parser.parse_args()
    run(args.docs, args.queries, args.heap_mb, args.threads)


if __name__ == "__main__":
    main()
