"""BEIR SciFact, read-only from ``../shared/data/scifact``, turned into Lithos notes.

Each abstract becomes one Markdown file whose frontmatter id is a UUID derived from the
SciFact ``_id`` (so runs are reproducible and vectors are reused), title = ``title`` and body =
``text``. :func:`note_id` and :func:`doc_id` convert between the two.
"""

from __future__ import annotations

import csv
import json
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
if not ROOT.exists():
    ROOT = Path("/work/shared/data/scifact")
_NAMESPACE = uuid.UUID("6f1c3b0e-5a47-4d52-9a57-1f0f3d2b8c11")


@dataclass(frozen=True)
class SciFact:
    corpus: dict[str, tuple[str, str]]  # _id -> (title, text)
    queries: dict[str, str]  # query id -> claim
    qrels: dict[str, dict[str, dict[str, int]]]  # split -> query id -> doc id -> grade


def note_id(doc: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"scifact:{doc}"))


def load(root: Path = ROOT) -> SciFact:
    corpus: dict[str, tuple[str, str]] = {}
    with (root / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            corpus[row["_id"]] = (row["title"], row["text"])
    queries: dict[str, str] = {}
    with (root / "queries.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            queries[row["_id"]] = row["text"]
    qrels: dict[str, dict[str, dict[str, int]]] = {}
    for split in ("train", "test"):
        table: dict[str, dict[str, int]] = defaultdict(dict)
        with (root / "qrels" / f"{split}.tsv").open(encoding="utf-8") as rows:
            for row in csv.DictReader(rows, delimiter="\t"):
                table[row["query-id"]][row["corpus-id"]] = int(row["score"])
        qrels[split] = dict(table)
    return SciFact(corpus, queries, qrels)


def subset(data: SciFact, docs: int, queries_per_split: int) -> SciFact:
    """A small, self-consistent slice for quick runs: the first queries of each split, their
    relevant abstracts, then other abstracts in corpus order up to ``docs``."""
    qrels = {
        split: dict(list(table.items())[:queries_per_split]) for split, table in data.qrels.items()
    }
    keep = {doc for table in qrels.values() for rel in table.values() for doc in rel}
    for doc in data.corpus:
        if len(keep) >= docs:
            break
        keep.add(doc)
    corpus = {doc: value for doc, value in data.corpus.items() if doc in keep}
    qrels = {
        split: {q: {d: g for d, g in rel.items() if d in corpus} for q, rel in table.items()}
        for split, table in qrels.items()
    }
    return SciFact(corpus, data.queries, qrels)


def write_notes(data: SciFact, knowledge: Path) -> dict[str, str]:
    """Write one file per abstract into ``knowledge``; returns ``note id -> SciFact _id``."""
    knowledge.mkdir(parents=True, exist_ok=True)
    ids = {}
    for doc, (title, text) in data.corpus.items():
        nid = note_id(doc)
        ids[nid] = doc
        meta = {"id": nid, "title": title or doc, "tags": ["scifact"], "author": "beir"}
        front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
        (knowledge / f"{doc}.md").write_text(f"---\n{front}---\n\n{text}\n", encoding="utf-8")
    return ids
