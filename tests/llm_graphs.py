"""Builders for the LLM-decoder pieces the recognition tests need, in the spellings exporters
write: rotary position embedding (rotate_half, interleaved, partial; cos/sin computed from
positions or gathered from tables), RMSNorm (every square, division and cast placement),
SiLU and SwiGLU.  Each returns onnx.helper nodes and the initializers they read."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from passes_helpers import F, I64, build, tensor

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
                 half_at: int | None = None, float16: bool = False,
                 prefix: str = "") -> tuple[list, dict]:
    """x·cos + rotate(x)·sin on the last axis of ``x`` (width ``width``), reading "cos" and
    "sin"; ``rotary_dim`` rotates only the first features and Concat's the rest;
    ``lanes`` picks the interleaved features by "slice" (step 2), "gather" or "split" of x
    reshaped to pairs; ``half_at`` cuts rotate_half elsewhere than the middle (a near miss).
    Intermediates are named with ``prefix``."""
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
    return _prefixed(nodes, prefix, keep={y}), inits


def _prefixed(nodes: list, prefix: str, keep: set[str]) -> list:
    """``nodes`` with every value they make (but those in ``keep``) and their names prefixed."""
    made = {out for n in nodes for out in n.output} - keep
    for n in nodes:
        n.name = prefix + n.name
        n.input[:] = [prefix + name if name in made else name for name in n.input]
        n.output[:] = [prefix + name if name in made else name for name in n.output]
    return nodes


# ----------------------------------------------------------------------------- RMSNorm
def rmsnorm_nodes(x: str, y: str, width: int, *, square: str = "pow", divide: str = "div",
                  cast: str | None = None, weighted: bool = True, weight_first: bool = False,
                  float16: bool = False, axes_input: bool = True,
                  prefix: str = "") -> tuple[list, dict]:
    """x / sqrt(mean(x²) + ε) (· w) over the last axis, as exporters spell it: the square as
    "pow" or "mul"; the division as "div", "reciprocal", "div_of_one" (TorchScript's rsqrt) or
    "pow_half" (x · (…)^−0.5); ``cast`` "after" (HF: float16 x cast to float32, normalized,
    cast back, then weighted) or "before" (weighted in float32, then cast back), or None
    (computed in x's type: float16 with ``float16``).  Intermediates and the weight are named
    with ``prefix``; the constants are shared."""
    p = prefix
    compute = np.float32 if cast or not float16 else np.float16
    weight_type = np.float32 if cast == "before" else (np.float16 if float16 or cast else
                                                       np.float32)
    src = x
    nodes = []
    if cast:
        nodes.append(node("Cast", [x], f"{p}x_up", to=TensorProto.FLOAT))
        src = f"{p}x_up"
    nodes += [node("Pow", [src, "two"], f"{p}sq") if square == "pow"
              else node("Mul", [src, src], f"{p}sq"),
              node("ReduceMean", [f"{p}sq", "axes"] if axes_input else [f"{p}sq"], f"{p}ms",
                   **({} if axes_input else {"axes": [-1]})),
              node("Add", [f"{p}ms", "eps"], f"{p}mse")]
    if divide == "pow_half":
        nodes += [node("Pow", [f"{p}mse", "minus_half"], f"{p}inv"),
                  node("Mul", [src, f"{p}inv"], f"{p}n")]
    else:
        nodes.append(node("Sqrt", [f"{p}mse"], f"{p}rms"))
        if divide == "div":
            nodes.append(node("Div", [src, f"{p}rms"], f"{p}n"))
        elif divide == "reciprocal":
            nodes += [node("Reciprocal", [f"{p}rms"], f"{p}inv"),
                      node("Mul", [src, f"{p}inv"], f"{p}n")]
        else:  # Div of one, as TorchScript writes torch.rsqrt
            nodes += [node("Div", ["one", f"{p}rms"], f"{p}inv"),
                      node("Mul", [f"{p}inv", src], f"{p}n")]
    normed = f"{p}n"
    if cast == "after":
        nodes.append(node("Cast", [normed], f"{p}n_down", to=F16))
        normed = f"{p}n_down"
    scaled = y if cast != "before" else f"{p}scaled"
    if weighted:
        operands = [f"{p}w", normed] if weight_first else [normed, f"{p}w"]
        nodes.append(node("Mul", operands, scaled))
    else:
        nodes.append(node("Identity", [normed], scaled))
    if cast == "before":
        nodes.append(node("Cast", [scaled], y, to=F16))
    inits = {"two": np.array(2, compute), "eps": np.array(1e-6, compute),
             "one": np.array(1, compute), "minus_half": np.array(-0.5, compute),
             f"{p}w": (RNG.random(width) + 0.5).astype(weight_type), "axes": ints(-1)}
    used = {name for n in nodes for name in n.input}
    return nodes, {k: v for k, v in inits.items() if k in used}


def decoder_norms_nodes(x: str, y: str, width: int, *, bias: bool = False,
                        **form) -> tuple[list, dict]:
    """The residual stream of a two-sub-layer decoder: norm → MatMul (→ bias Add with
    ``bias``, as in GPT-NeoX-style blocks) → residual Add, twice, then the final norm.  Each
    sum is read by the next norm and by the next Add, as in Llama; the last one only by the
    final norm."""
    nodes, inits = [], {}
    stream = x
    weight_type = np.float16 if form.get("float16") or form.get("cast") else np.float32
    for k in range(2):
        norm, norm_inits = rmsnorm_nodes(stream, f"h{k}", width, prefix=f"n{k}_", **form)
        out = f"out{k}_biased" if bias else f"out{k}"
        nodes += norm + [node("MatMul", [f"h{k}", f"proj{k}"], f"out{k}")]
        if bias:
            nodes.append(node("Add", [f"out{k}", f"bias{k}"], out))
            inits[f"bias{k}"] = RNG.standard_normal(width).astype(weight_type)
        nodes.append(node("Add", [stream, out], f"sum{k}"))
        inits.update(norm_inits, **{f"proj{k}": (RNG.standard_normal((width, width)) / 4)
                                    .astype(weight_type)})
        stream = f"sum{k}"
    norm, norm_inits = rmsnorm_nodes(stream, y, width, prefix="final_", **form)
    return nodes + norm, {**inits, **norm_inits}


# ------------------------------------------------------------------------ SiLU, SwiGLU
def silu_nodes(x: str, y: str, *, alpha: float | None = None, sigmoid_first: bool = False,
               float16: bool = False) -> tuple[list, dict]:
    """x·Sigmoid(x) (Swish x·Sigmoid(α·x) with ``alpha``), operands in either order."""
    nodes, inits, source = [], {}, x
    if alpha is not None:
        nodes.append(node("Mul", [x, f"{y}_alpha"], f"{y}_scaled"))
        inits[f"{y}_alpha"] = np.array(alpha, np.float16 if float16 else np.float32)
        source = f"{y}_scaled"
    nodes.append(node("Sigmoid", [source], f"{y}_sigmoid"))
    operands = [f"{y}_sigmoid", x] if sigmoid_first else [x, f"{y}_sigmoid"]
    nodes.append(node("Mul", operands, y))
    return nodes, inits


def swiglu_mlp_nodes(x: str, y: str, width: int, hidden: int, *,
                     float16: bool = False) -> tuple[list, dict]:
    """Llama's MLP: down(silu(gate(x)) · up(x)), projections as MatMuls."""
    dtype = np.float16 if float16 else np.float32
    nodes = [node("MatMul", [x, "w_gate"], "gate"), node("MatMul", [x, "w_up"], "up")]
    silu, _ = silu_nodes("gate", "gate_silu", sigmoid_first=True)
    nodes += silu + [node("Mul", ["gate_silu", "up"], "gated"),
                     node("MatMul", ["gated", "w_down"], y)]
    inits = {name: (RNG.standard_normal(shape) / np.sqrt(shape[0])).astype(dtype)
             for name, shape in (("w_gate", (width, hidden)), ("w_up", (width, hidden)),
                                 ("w_down", (hidden, width)))}
    return nodes, inits


# ----------------------------------------------------------------------- rotary models
HEADS_FIRST_X = ["batch", 4, "seq", 16]


def rotary_graph(x_shape, cos_sin, rotary, *, float16=False, opset=18, ids=False):
    """A rotary embedding of x (cos/sin from ``cos_sin``) as a tiny model."""
    elem = F16 if float16 else F
    table_nodes, table_inits = cos_sin
    nodes, inits = rotary
    inputs = [tensor("x", elem, x_shape)]
    if ids:
        inputs.append(tensor("position_ids", I64, ["batch", "seq"]))
    return build(table_nodes + nodes, inputs, [tensor("y", elem, None)],
                 {**table_inits, **inits}, opset=opset)


ROTARY_FORMS = {
    # HF Llama: rotate_half, cos/sin computed from positions
    "half": (HEADS_FIRST_X, lambda f16: positions_cos_sin("x", 16, float16=f16),
             dict(), dict(interleaved=0, rotary_dim=16, num_heads=4)),
    # Phi / GPT-NeoX: partial rotate_half, negation as Mul by -1, tables gathered by ids
    "half_partial_tables": (
        HEADS_FIRST_X, lambda f16: gathered_cos_sin("position_ids", 8, interleaved=False,
                                                    heads_axis=1, float16=f16),
        dict(rotary_dim=8, negate="mul"), dict(interleaved=0, rotary_dim=8, num_heads=4)),
    # GPT-J: interleaved by slices with steps, partial, sequence-first layout
    "interleaved_slices": (
        ["batch", "seq", 4, 16], lambda f16: gathered_cos_sin(
            "position_ids", 8, interleaved=True, heads_axis=2, float16=f16),
        dict(interleaved=True, rotary_dim=8), dict(interleaved=1, rotary_dim=8, num_heads=4)),
    # the even/odd features from x reshaped to pairs: Gather, or Split + Squeeze
    "interleaved_gather": (
        HEADS_FIRST_X, lambda f16: gathered_cos_sin("position_ids", 16, interleaved=True,
                                                    heads_axis=1, float16=f16),
        dict(interleaved=True, lanes="gather"), dict(interleaved=1, rotary_dim=16)),
    "interleaved_split": (
        HEADS_FIRST_X, lambda f16: gathered_cos_sin("position_ids", 16, interleaved=True,
                                                    heads_axis=1, float16=f16),
        dict(interleaved=True, lanes="split"), dict(interleaved=1, rotary_dim=16)),
}


def rotary_form_graph(form: str, float16: bool = False):
    x_shape, cos_sin, options, _ = ROTARY_FORMS[form]
    return rotary_graph(x_shape, cos_sin(float16), rotary_nodes("x", "y", x_shape[-1],
                                                                 float16=float16, **options),
                         float16=float16, ids="tables" in form or "interleaved" in form)


