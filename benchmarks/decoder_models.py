"""Llama-shaped decoders at real sizes, built with the onnx library alone (no torch).

The graph follows what PyTorch's exporters write for a Llama decoder (float16 weights stored
as [in, out] for MatMul; RMSNorm computed in float32 between two Casts; rotary embeddings
from a Range of positions; grouped-query attention repeating K/V with Unsqueeze + Expand +
Reshape; a causal mask combined with the attention mask; SwiGLU MLP), with node names in
name scopes as the TorchScript exporter gives them.  The weights never sit in memory: each
one is written in chunks straight into the external data file, from a pool of random float16
values (so the 16 GB of the 8B model take the time of writing them, not of drawing them).
Files are kept in a cache folder and rebuilt only when missing.
"""

from __future__ import annotations

import os
import shutil
import zlib
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BUILDER_VERSION = 1            # part of the file name: a changed builder never reuses a file
INLINE_BYTES = 1024            # smaller tensors stay inside the .onnx, as onnx writes them
ALIGNMENT = 4096               # each external tensor on a page boundary, as GraphLab writes
POOL_ELEMENTS = 1 << 24        # random float16 values the weights are cut from (32 MiB)
CHUNK_ELEMENTS = 1 << 24       # at most this many elements in memory while writing a weight
WEIGHT_STD = 0.02              # like a freshly initialised Llama


@dataclass(frozen=True)
class DecoderShape:
    """The sizes that make a decoder "1B" or "8B" (Llama-3.2-1B and Llama-3.1-8B)."""

    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    tied_embeddings: bool      # the output projection reads the embedding, transposed
    rope_theta: float = 500000.0
    eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def parameters(self) -> int:
        h, kv = self.hidden, self.kv_heads * self.head_dim
        per_layer = 2 * h * h + 2 * h * kv + 3 * h * self.intermediate + 2 * h
        embeddings = self.vocab * h * (1 if self.tied_embeddings else 2)
        return self.layers * per_layer + embeddings + h

    def weight_bytes(self) -> int:
        return 2 * self.parameters()   # float16


LLAMA_1B = DecoderShape("llama-1b", hidden=2048, layers=16, heads=32, kv_heads=8,
                        intermediate=8192, vocab=128256, tied_embeddings=True)
LLAMA_8B = DecoderShape("llama-8b", hidden=4096, layers=32, heads=32, kv_heads=8,
                        intermediate=14336, vocab=128256, tied_embeddings=False)
# The 8B's widths (hidden, heads, KV heads, MLP, untied vocabulary projection) with 2 of its 32
# layers: every layer is built alike, so this checks in onnxruntime what the 8B itself is too
# big to be run in on a 24 GB machine.
LLAMA_8B_2_LAYERS = replace(LLAMA_8B, name="llama-8b-2layers", layers=2)
TINY = DecoderShape("llama-tiny", hidden=64, layers=2, heads=4, kv_heads=2, intermediate=128,
                    vocab=256, tied_embeddings=True)


def default_cache_dir() -> Path:
    """The user's cache folder for GraphLab's benchmark models ($XDG_CACHE_HOME or ~/.cache)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "graphlab" / "scale"


def check_free_disk(what: str, need: float, folder: Path) -> None:
    """A RuntimeError when ``folder``'s disk cannot hold ``need`` bytes for ``what``."""
    free = shutil.disk_usage(folder).free
    if free < need:
        raise RuntimeError(f"{what} needs {need / 2**30:.1f} GiB of disk, "
                           f"{free / 2**30:.1f} GiB are free in {folder}")


def cached_decoder(shape: DecoderShape, cache_dir: str | os.PathLike) -> Path:
    """The decoder's .onnx file in ``cache_dir``, built first if it is not there yet (a
    RuntimeError says so when the disk cannot hold it)."""
    folder = Path(cache_dir) / f"{shape.name}-v{BUILDER_VERSION}"
    model = folder / "model.onnx"
    if model.exists():
        return model
    folder.parent.mkdir(parents=True, exist_ok=True)
    check_free_disk(shape.name, shape.weight_bytes() * 1.05, folder.parent)
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    build_decoder(shape, partial / "model.onnx")
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)     # a build cut short never looks finished
    return model


def build_decoder(shape: DecoderShape, path: str | os.PathLike) -> None:
    """Write the decoder to ``path`` with its weights in ``<path>.data``."""
    path = Path(path)
    with open(path.with_name(path.name + ".data"), "wb") as data:
        builder = _Builder(shape, _WeightWriter(data, path.name + ".data"))
        model = builder.model()
    with open(path, "wb") as handle:
        handle.write(model.SerializeToString())


class _WeightWriter:
    """Streams weights into the external data file and returns the TensorProtos that point
    at them."""

    def __init__(self, handle, location: str):
        self.handle, self.location, self.size = handle, location, 0
        self.pool = (np.random.default_rng(0).standard_normal(POOL_ELEMENTS, np.float32)
                     * WEIGHT_STD).astype(np.float16)

    def random(self, name: str, dims: tuple[int, ...]) -> TensorProto:
        count = int(np.prod(dims))
        start = zlib.crc32(name.encode()) % POOL_ELEMENTS  # each weight its own values
        return self._write(name, dims, self._cycle(start, count))

    def ones(self, name: str, dims: tuple[int, ...]) -> TensorProto:
        return self._write(name, dims, [np.ones(int(np.prod(dims)), np.float16)])

    def _cycle(self, start: int, count: int):
        while count:
            take = min(count, CHUNK_ELEMENTS, POOL_ELEMENTS - start)
            yield self.pool[start:start + take]
            count -= take
            start = (start + take) % POOL_ELEMENTS

    def _write(self, name: str, dims: tuple[int, ...], chunks) -> TensorProto:
        offset = -(-self.size // ALIGNMENT) * ALIGNMENT
        self.handle.write(bytes(offset - self.size))
        length = 0
        for chunk in chunks:
            self.handle.write(memoryview(chunk).cast("B"))
            length += chunk.nbytes
        self.size = offset + length
        tensor = TensorProto(name=name, data_type=TensorProto.FLOAT16, dims=dims,
                             data_location=TensorProto.EXTERNAL)
        for key, value in (("location", self.location), ("offset", str(offset)),
                           ("length", str(length))):
            tensor.external_data.add(key=key, value=value)
        return tensor


class _Builder:
    """The decoder's nodes and initializers, layer by layer."""

    def __init__(self, shape: DecoderShape, weights: _WeightWriter):
        self.s, self.weights = shape, weights
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[TensorProto] = []
        self._constants: dict[tuple, str] = {}
        self._names: dict[str, int] = {}

    # -- small helpers -------------------------------------------------------------------
    def op(self, op_type: str, inputs: list[str], scope: str, output: str | None = None,
           **attrs) -> str:
        """One node named as the TorchScript exporter names it ('/model/norm/Mul_1')."""
        name = f"{scope}/{op_type}"
        taken = self._names.get(name, 0)
        self._names[name] = taken + 1
        name = name if not taken else f"{name}_{taken}"
        output = output or f"{name}_output_0"
        self.nodes.append(helper.make_node(op_type, inputs, [output], name=name, **attrs))
        return output

    def const(self, value, dtype=np.int64) -> str:
        """A small constant (axes, shapes, scalars), stored once inside the .onnx."""
        array = np.asarray(value, dtype=dtype)
        key = (array.dtype.str, array.shape, array.tobytes())
        if key not in self._constants:
            name = f"const_{len(self._constants)}"
            self.initializers.append(numpy_helper.from_array(array, name))
            self._constants[key] = name
        return self._constants[key]

    def weight(self, name: str, dims: tuple[int, ...]) -> str:
        self.initializers.append(self.weights.random(name, dims))
        return name

    # -- the model ---------------------------------------------------------------------------
    def model(self) -> onnx.ModelProto:
        s = self.s
        embed = self.weight("model.embed_tokens.weight", (s.vocab, s.hidden))
        x = self.op("Gather", [embed, "input_ids"], "/model/embed_tokens")
        cos, sin = self.rotary()
        mask = self.attention_mask()
        for layer in range(s.layers):
            x = self.decoder_layer(x, layer, cos, sin, mask)
        x = self.rms_norm(x, "model.norm.weight", "/model/norm")
        if s.tied_embeddings:
            head = self.op("Transpose", [embed], "/lm_head", perm=[1, 0])
        else:
            head = self.weight("lm_head.weight", (s.hidden, s.vocab))
        self.op("MatMul", [x, head], "/lm_head", output="logits")
        graph = helper.make_graph(
            self.nodes, f"{s.name}-decoder",
            [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"])
             for n in ("input_ids", "attention_mask")],
            [helper.make_tensor_value_info("logits", TensorProto.FLOAT16,
                                           ["batch", "seq", s.vocab])],
            self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)],
                                  producer_name="graphlab-benchmarks")
        model.ir_version = 10
        return model

    def rotary(self) -> tuple[str, str]:
        """cos and sin of every position, [seq, head_dim], in float16."""
        s, scope = self.s, "/model/rotary_emb"
        seq = self.op("Gather", [self.op("Shape", ["input_ids"], scope), self.const(1)], scope)
        positions = self.op("Range", [self.const(0), seq, self.const(1)], scope)
        positions = self.op("Cast", [positions], scope, to=TensorProto.FLOAT)
        positions = self.op("Unsqueeze", [positions, self.const([1])], scope)
        inv_freq = 1.0 / s.rope_theta ** (np.arange(0, s.head_dim, 2) / s.head_dim)
        freqs = self.op("Mul", [positions, self.const(inv_freq, np.float32)], scope)
        angles = self.op("Concat", [freqs, freqs], scope, axis=-1)
        return (self.op("Cast", [self.op("Cos", [angles], scope)], scope, to=TensorProto.FLOAT16),
                self.op("Cast", [self.op("Sin", [angles], scope)], scope, to=TensorProto.FLOAT16))

    def attention_mask(self) -> str:
        """0 where a query may attend (causal and not padding), -65504 elsewhere:
        [batch, 1, seq, seq] in float16."""
        scope = "/model/mask"
        seq = self.op("Gather", [self.op("Shape", ["input_ids"], scope), self.const(1)], scope)
        positions = self.op("Range", [self.const(0), seq, self.const(1)], scope)
        keys = self.op("Unsqueeze", [positions, self.const([0])], scope)
        queries = self.op("Unsqueeze", [positions, self.const([1])], scope)
        causal = self.op("LessOrEqual", [keys, queries], scope)
        padding = self.op("Cast", ["attention_mask"], scope, to=TensorProto.BOOL)
        padding = self.op("Unsqueeze", [padding, self.const([1, 2])], scope)
        allowed = self.op("And", [causal, padding], scope)
        return self.op("Where", [allowed, self.const(0.0, np.float16),
                                 self.const(-65504.0, np.float16)], scope)

    def rms_norm(self, x: str, weight_name: str, scope: str) -> str:
        weight = self.weights.ones(weight_name, (self.s.hidden,))
        self.initializers.append(weight)
        wide = self.op("Cast", [x], scope, to=TensorProto.FLOAT)
        square = self.op("Pow", [wide, self.const(2.0, np.float32)], scope)
        mean = self.op("ReduceMean", [square, self.const([-1])], scope, keepdims=1)
        std = self.op("Sqrt", [self.op("Add", [mean, self.const(self.s.eps, np.float32)],
                                       scope)], scope)
        normed = self.op("Mul", [wide, self.op("Reciprocal", [std], scope)], scope)
        normed = self.op("Cast", [normed], scope, to=TensorProto.FLOAT16)
        return self.op("Mul", [weight_name, normed], scope)

    def decoder_layer(self, x: str, layer: int, cos: str, sin: str, mask: str) -> str:
        prefix, scope = f"model.layers.{layer}", f"/model/layers.{layer}"
        h = self.rms_norm(x, f"{prefix}.input_layernorm.weight", f"{scope}/input_layernorm")
        x = self.op("Add", [x, self.attention(h, prefix, f"{scope}/self_attn", cos, sin, mask)],
                    scope)
        h = self.rms_norm(x, f"{prefix}.post_attention_layernorm.weight",
                          f"{scope}/post_attention_layernorm")
        return self.op("Add", [x, self.mlp(h, prefix, f"{scope}/mlp")], scope)

    def linear(self, x: str, weight_name: str, dims: tuple[int, int], scope: str) -> str:
        return self.op("MatMul", [x, self.weight(weight_name, dims)], scope)

    def attention(self, h: str, prefix: str, scope: str, cos: str, sin: str, mask: str) -> str:
        s = self.s
        kv = s.kv_heads * s.head_dim
        heads = {}
        for part, count in (("q", s.heads), ("k", s.kv_heads), ("v", s.kv_heads)):
            proj = f"{scope}/{part}_proj"
            out = self.linear(h, f"{prefix}.self_attn.{part}_proj.weight",
                              (s.hidden, s.hidden if part == "q" else kv), proj)
            out = self.op("Reshape", [out, self.const([0, 0, count, s.head_dim])], scope)
            heads[part] = self.op("Transpose", [out], scope, perm=[0, 2, 1, 3])
        q = self.rotate(heads["q"], cos, sin, scope)
        k = self.repeat_kv(self.rotate(heads["k"], cos, sin, scope), scope)
        v = self.repeat_kv(heads["v"], scope)
        scores = self.op("MatMul", [q, self.op("Transpose", [k], scope, perm=[0, 1, 3, 2])],
                         scope)
        scores = self.op("Mul", [scores, self.const(s.head_dim ** -0.5, np.float16)], scope)
        probs = self.op("Softmax", [self.op("Add", [scores, mask], scope)], scope, axis=-1)
        context = self.op("Transpose", [self.op("MatMul", [probs, v], scope)], scope,
                          perm=[0, 2, 1, 3])
        context = self.op("Reshape", [context, self.const([0, 0, s.hidden])], scope)
        return self.linear(context, f"{prefix}.self_attn.o_proj.weight", (s.hidden, s.hidden),
                           f"{scope}/o_proj")

    def rotate(self, x: str, cos: str, sin: str, scope: str) -> str:
        """x * cos + rotate_half(x) * sin."""
        half = self.s.head_dim // 2
        first = self.op("Slice", [x, self.const([0]), self.const([half]), self.const([-1])],
                        scope)
        second = self.op("Slice", [x, self.const([half]), self.const([self.s.head_dim]),
                                   self.const([-1])], scope)
        rotated = self.op("Concat", [self.op("Neg", [second], scope), first], scope, axis=-1)
        return self.op("Add", [self.op("Mul", [x, cos], scope),
                               self.op("Mul", [rotated, sin], scope)], scope)

    def repeat_kv(self, x: str, scope: str) -> str:
        """[batch, kv_heads, seq, dim] -> [batch, heads, seq, dim] (grouped-query attention)."""
        s = self.s
        groups = s.heads // s.kv_heads
        x = self.op("Unsqueeze", [x, self.const([2])], scope)
        x = self.op("Expand", [x, self.const([1, 1, groups, 1, 1])], scope)
        return self.op("Reshape", [x, self.const([0, s.heads, -1, s.head_dim])], scope)

    def mlp(self, h: str, prefix: str, scope: str) -> str:
        s = self.s
        gate = self.linear(h, f"{prefix}.mlp.gate_proj.weight", (s.hidden, s.intermediate),
                           f"{scope}/gate_proj")
        up = self.linear(h, f"{prefix}.mlp.up_proj.weight", (s.hidden, s.intermediate),
                         f"{scope}/up_proj")
        silu = self.op("Mul", [gate, self.op("Sigmoid", [gate], f"{scope}/act_fn")],
                       f"{scope}/act_fn")
        return self.linear(self.op("Mul", [silu, up], scope), f"{prefix}.mlp.down_proj.weight",
                           (s.intermediate, s.hidden), f"{scope}/down_proj")
