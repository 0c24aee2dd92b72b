"""Builders for the LLM-decoder pieces the recognition tests need, in the spellings exporters
write: rotary position embedding (rotate_half, interleaved, partial; cos/sin computed from
positions or gathered from tables), RMSNorm (every square, division and cast placement),
SiLU and SwiGLU.  Each returns onnx.helper nodes and the initializers they read."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

F16 = TensorProto.FLOAT16
RNG = np.random.default_rng(14)


def node(op_type: str, inputs: list[str], output: str, **attrs):
    return helper.make_node(op_type, inputs, [output], name=output, **attrs)


def ints(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


# ----------------------------------------------------------------------------- rotary
def positions_cos_sin(x: str, width: int, *, sequence_first: bool = False,
                      float16: bool = False) -> tuple[list, dict]:
    """cos and sin computed from positions as HF's LlamaRotaryEmbedding writes them: Range(S)
    times inv_freq, duplicated (Concat), Cos/Sin (cast to float16 for a float16 model), shaped
    [1, 1, S, width] for x [B, N, S, H] or [1, S, 1, width] for x [B, S, N, H].  Produces
    values "cos" and "sin"."""
    inv_freq = (1.0 / 10000 ** (np.arange(0, width, 2) / width)).astype(np.float32)
    nodes = [node("Shape", [x], "x_shape"),
             node("Gather", ["x_shape", "seq_axis"], "seq_len", axis=0),
             node("Range", ["zero", "seq_len", "step"], "positions"),
             node("Cast", ["positions"], "positions_f", to=TensorProto.FLOAT),
             node("Unsqueeze", ["positions_f", "last"], "positions_col"),
             node("Mul", ["positions_col", "inv_freq"], "freqs"),
             node("Concat", ["freqs", "freqs"], "angles", axis=-1)]
    inits = {"seq_axis": np.array(1 if sequence_first else 2, np.int64),
             "zero": np.array(0, np.int64), "step": np.array(1, np.int64), "last": ints(-1),
             "inv_freq": inv_freq, "table_axes": ints(0, 2) if sequence_first else ints(0, 1)}
    for fn in ("cos", "sin"):
        out = f"{fn}_f" if float16 else f"{fn}_table"
        nodes.append(node(fn.capitalize(), ["angles"], out))
        if float16:
            nodes.append(node("Cast", [out], f"{fn}_table", to=F16))
        nodes.append(node("Unsqueeze", [f"{fn}_table", "table_axes"], fn))
    return nodes, inits


def gathered_cos_sin(ids: str, width: int, *, interleaved: bool, heads_axis: int,
                     positions: int = 32, float16: bool = False) -> tuple[list, dict]:
    """cos and sin gathered from constant [positions, width/2] tables by position ids [B, S],
    each frequency repeated for its pair (Concat of halves, or repeat_interleave written as
    Unsqueeze → Expand → Reshape), with a unit heads axis.  Produces "cos" and "sin"."""
    angles = np.arange(positions)[:, None] / 10000 ** (np.arange(0, width, 2) / width)
    dtype = np.float16 if float16 else np.float32
    inits = {"cos_cache": np.cos(angles).astype(dtype), "sin_cache": np.sin(angles).astype(dtype),
             "heads_axis": ints(heads_axis), "pair_axis": ints(-1), "pair": ints(1, 1, 1, 2),
             "rows_shape": ints(0, 0, width)}
    nodes = []
    for fn in ("cos", "sin"):
        nodes.append(node("Gather", [f"{fn}_cache", ids], f"{fn}_half", axis=0))
        if interleaved:
            nodes += [node("Unsqueeze", [f"{fn}_half", "pair_axis"], f"{fn}_col"),
                      node("Expand", [f"{fn}_col", "pair"], f"{fn}_pairs"),
                      node("Reshape", [f"{fn}_pairs", "rows_shape"], f"{fn}_rows")]
        else:
            nodes.append(node("Concat", [f"{fn}_half", f"{fn}_half"], f"{fn}_rows", axis=-1))
        nodes.append(node("Unsqueeze", [f"{fn}_rows", "heads_axis"], fn))
    return nodes, inits


def rotary_nodes(x: str, y: str, width: int, *, interleaved: bool = False,
                 lanes: str = "slice", rotary_dim: int | None = None, negate: str = "neg",
                 half_at: int | None = None, float16: bool = False) -> tuple[list, dict]:
    """x·cos + rotate(x)·sin on the last axis of ``x`` (width ``width``), reading "cos" and
    "sin"; ``rotary_dim`` rotates only the first features and Concat's the rest;
    ``lanes`` picks the interleaved features by "slice" (step 2), "gather" or "split" of x
    reshaped to pairs; ``half_at`` cuts rotate_half elsewhere than the middle (a near miss)."""
    rotated = rotary_dim or width
    inits = {"axis": ints(-1), "begin": ints(0), "end": ints(np.iinfo(np.int64).max),
             "cut": ints(rotated),
             "minus_one": np.array(-1.0, np.float16 if float16 else np.float32)}
    nodes = []
    part = x
    if rotary_dim:
        nodes += [node("Slice", [x, "begin", "cut", "axis"], "x_rot"),
                  node("Slice", [x, "cut", "end", "axis"], "x_pass")]
        part = "x_rot"

    def neg(src: str, out: str) -> list:
        return ([node("Neg", [src], out)] if negate == "neg"
                else [node("Mul", [src, "minus_one"], out)])

    if not interleaved:
        half = half_at if half_at is not None else rotated // 2
        inits["half"] = ints(half)
        nodes += [node("Slice", [part, "begin", "half", "axis"], "lower"),
                  node("Slice", [part, "half", "end", "axis"], "upper"),
                  *neg("upper", "upper_neg"),
                  node("Concat", ["upper_neg", "lower"], "turned", axis=-1)]
    else:
        inits.update(two=ints(2), one=ints(1), flat=ints(0, 0, 0, rotated))
        if lanes == "slice":
            nodes += [node("Slice", [part, "begin", "end", "axis", "two"], "even"),
                      node("Slice", [part, "one", "end", "axis", "two"], "odd")]
        else:
            inits["pairs_shape"] = ints(0, 0, 0, rotated // 2, 2)
            nodes.append(node("Reshape", [part, "pairs_shape"], "pairs"))
            if lanes == "gather":
                inits.update(first=np.array(0, np.int64), second=np.array(1, np.int64))
                nodes += [node("Gather", ["pairs", "first"], "even", axis=-1),
                          node("Gather", ["pairs", "second"], "odd", axis=-1)]
            else:
                nodes.append(helper.make_node("Split", ["pairs"], ["even_1", "odd_1"],
                                              name="split_pairs", axis=-1, num_outputs=2))
                nodes += [node("Squeeze", ["even_1", "axis"], "even"),
                          node("Squeeze", ["odd_1", "axis"], "odd")]
        nodes += [*neg("odd", "odd_neg"),
                  node("Unsqueeze", ["odd_neg", "axis"], "odd_col"),
                  node("Unsqueeze", ["even", "axis"], "even_col"),
                  node("Concat", ["odd_col", "even_col"], "stacked", axis=-1),
                  node("Reshape", ["stacked", "flat"], "turned")]
    done = "rotated" if rotary_dim else y
    nodes += [node("Mul", [part, "cos"], "x_cos"), node("Mul", ["turned", "sin"], "turned_sin"),
              node("Add", ["x_cos", "turned_sin"], done)]
    if rotary_dim:
        nodes.append(node("Concat", ["rotated", "x_pass"], y, axis=-1))
    return nodes, inits
