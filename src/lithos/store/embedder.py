"""all-MiniLM-L6-v2 on ONNX Runtime: local, offline sentence embeddings without PyTorch.

The model ships inside Lithos, in ``lithos/models/all-MiniLM-L6-v2/``: ``model.onnx`` (int8
weights, built by ``scripts/build_model.py`` from the Apache-2.0 checkpoint) and the WordPiece
``tokenizer.json`` (read by Lithos's own WordPiece tokenizer, ``wordpiece.py``), each checked
against its sha256 before it is used. The pipeline is the one
of sentence-transformers' ``all-MiniLM-L6-v2``: at most 256 tokens, mean pooling over the
attention mask, L2 normalisation.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lithos.domain.embedding import Embedder, EmbeddingSpace, space_of
from lithos.errors import ConfigError
from lithos.lazy_numpy import np

if TYPE_CHECKING:
    from lithos.store.wordpiece import WordPieceTokenizer

# The vector cache is keyed by this id: a different model file must get a different id, so
# that vectors of one model are never compared with queries embedded by another.
MODEL_ID = "all-MiniLM-L6-v2-int8"
DIMENSION = 384
MAX_TOKENS = 256
MODEL_DIR = Path(__file__).resolve().parent.parent / "models" / "all-MiniLM-L6-v2"
# Pinned by scripts/build_model.py, which prints them.
MODEL_SHA256 = "a55a83cadb25ac0358db1292d3c01d2718d96492a29ebf7cfb6dde78a95e79d4"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


@dataclass(frozen=True)
class _Loaded:
    session: Any  # onnxruntime.InferenceSession
    tokenizer: WordPieceTokenizer
    input_names: frozenset[str]


class OnnxEmbedder(Embedder):
    """The all-MiniLM-L6-v2 embedder (384 dimensions, int8 weights, CPU).

    Constructing one costs nothing: the tokenizer and the ONNX session load on the first
    :meth:`embed` call, once, under a lock. ``embed`` is thread-safe. Raises
    :class:`~lithos.errors.ConfigError` for an unsupported ``model`` or bad sizes at construction,
    and on first use if the model or tokenizer file is missing or corrupt.
    """

    def __init__(
        self, model: str = "all-MiniLM-L6-v2", threads: int = 1, batch_size: int = 1
    ) -> None:
        if model != "all-MiniLM-L6-v2":
            raise _unsupported(model)
        if threads < 1 or batch_size < 1:
            raise ConfigError(
                f"embedding threads and batch size must be >= 1, got {threads} and {batch_size}"
            )
        self.model_id = MODEL_ID
        self.revision = MODEL_SHA256[:12]
        self.dimension = DIMENSION
        self.threads = threads
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._loaded: _Loaded | None = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``; see :meth:`lithos.domain.embedding.Embedder.embed`.

        Texts are sorted by length and run ``batch_size`` at a time, so a batch pads little;
        rows come back in the order of ``texts``. Tokens beyond 256 are dropped.
        """
        result = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return result
        loaded = self._load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            result[rows] = _encode(loaded, [texts[i] for i in rows])
        return result

    def warm(self) -> None:
        self._load()

    def _load(self) -> _Loaded:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                self._loaded = _load(self.threads)
            return self._loaded


# The embedding models Lithos can run, by the name `search.embedding_model` takes: a factory of
# (threads, batch_size). Constructing an embedder must cost nothing (load on first use): the
# vector index builds one per known space to embed queries in a space being retired.
EmbedderFactory = Callable[[int, int], Embedder]
MODELS: dict[str, EmbedderFactory] = {
    "all-MiniLM-L6-v2": lambda threads, batch: OnnxEmbedder("all-MiniLM-L6-v2", threads, batch),
}


def register_model(name: str, factory: EmbedderFactory) -> None:
    """Make ``name`` a valid ``search.embedding_model`` (replacing any model of that name)."""
    MODELS[name] = factory


def create_embedder(model: str, threads: int = 1, batch_size: int = 1) -> Embedder:
    """The embedder for the configured ``model`` name; raises ``ConfigError`` if unsupported."""
    factory = MODELS.get(model)
    if factory is None:
        raise _unsupported(model)
    return factory(threads, batch_size)


def embedder_for(space: EmbeddingSpace) -> Embedder | None:
    """An embedder of a known model that embeds into ``space``, or None (the model that made
    those vectors is not available any more)."""
    for factory in list(MODELS.values()):
        embedder = factory(1, 1)
        if space_of(embedder) == space:
            return embedder
    return None


def _unsupported(model: str) -> ConfigError:
    supported = ", ".join(MODELS)
    return ConfigError(
        f"unsupported embedding model {model!r}; supported: {supported}",
        model=model,
        supported=list(MODELS),
    )


def model_files() -> tuple[Path, Path]:
    """The shipped ``model.onnx`` and ``tokenizer.json``."""
    return MODEL_DIR / "model.onnx", MODEL_DIR / "tokenizer.json"


def verify_model_files() -> None:
    """Raise ConfigError unless both model files are present with their pinned sha256."""
    model_file, tokenizer_file = model_files()
    _verify(model_file, MODEL_SHA256)
    _verify(tokenizer_file, TOKENIZER_SHA256)


def _load(threads: int) -> _Loaded:
    # Imported here so that importing this module (and starting the server) stays cheap.
    import onnxruntime

    from lithos.store.wordpiece import WordPieceTokenizer

    verify_model_files()
    model_file, vocabulary = model_files()
    # The file truncates at 128 and pads to a fixed 128; the model takes 256 (MAX_TOKENS, passed
    # at each call) and padding to the longest text of a batch is cheaper.
    tokenizer = WordPieceTokenizer.from_file(vocabulary)

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Idle intra-op threads sleep instead of spinning: with two threads, the spin after each
    # run doubled a query's CPU and took the cores from the searches and scouts running beside
    # it, for no measurable gain in batch throughput (docs/concurrency.md).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Memory patterns pay off for fixed shapes; ours change with every batch, and keeping a plan
    # per shape costs about 100 MB at batch 8 and 400 MB at batch 32 for no speed.
    options.enable_mem_pattern = False
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(
        str(model_file), sess_options=options, providers=["CPUExecutionProvider"]
    )
    names = frozenset(node.name for node in session.get_inputs())
    return _Loaded(session=session, tokenizer=tokenizer, input_names=names)


def _verify(path: Path, sha256: str) -> None:
    if not path.is_file():
        raise ConfigError(f"embedding model file missing: {path} (reinstall Lithos)")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != sha256:
        raise ConfigError(
            f"embedding model file {path} is corrupt: sha256 {digest}, expected {sha256} "
            "(reinstall Lithos, or rebuild it with scripts/build_model.py)"
        )


def _encode(loaded: _Loaded, texts: list[str]) -> np.ndarray:
    ids, mask = loaded.tokenizer.encode_batch(texts, MAX_TOKENS)
    feeds = {"input_ids": ids, "attention_mask": mask}
    if "token_type_ids" in loaded.input_names:
        feeds["token_type_ids"] = np.zeros_like(ids)
    hidden = loaded.session.run(None, feeds)[0]
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
