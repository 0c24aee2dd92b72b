"""Builders shared by the normalization, recognition and fusion tests: random weights and the
written-out LayerNorm and GELU that exporters emit at low opsets."""

from __future__ import annotations

import numpy as np
from onnx import helper

RNG = np.random.default_rng(0)


def rand(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def decomposed_layernorm(x: str, y: str, swapped: bool = False) -> list:
    """LayerNorm over the last axis in nine ops (scale and shift first with ``swapped``);
    reads LN_CONSTANTS."""
    affine = (["gamma", "normed"], ["beta", "scaled"]) if swapped else (
        ["normed", "gamma"], ["scaled", "beta"])
    return [helper.make_node("ReduceMean", [x], ["mean"], axes=[-1]),
            helper.make_node("Sub", [x, "mean"], ["centered"]),
            helper.make_node("Pow", ["centered", "two"], ["squared"]),
            helper.make_node("ReduceMean", ["squared"], ["var"], axes=[-1]),
            helper.make_node("Add", ["var", "eps"], ["var_eps"]),
            helper.make_node("Sqrt", ["var_eps"], ["std"]),
            helper.make_node("Div", ["centered", "std"], ["normed"]),
            helper.make_node("Mul", affine[0], ["scaled"], name="ln_scale"),
            helper.make_node("Add", affine[1], [y], name="ln_shift")]


LN_CONSTANTS = {"two": np.array(2.0, np.float32), "eps": np.array(1e-5, np.float32),
                "gamma": rand(8) + 1, "beta": rand(8)}


def prenorm_stream(width: int = 8, bias_read_elsewhere: bool = False) -> tuple[list, dict]:
    """A pre-norm residual stream (ViT, GPT-2): LayerNormalization → MatMul → bias Add →
    residual Add, twice, then the final LayerNormalization to ``y``.  The first sum is read by
    the next norm and by the next residual Add; the last one by the final norm only.  With
    ``bias_read_elsewhere`` the first projection (``proj0``) is also a graph output."""
    nodes, inits, stream = [], {}, "x"
    for k in range(2):
        nodes += [helper.make_node("LayerNormalization", [stream, f"g{k}", f"b{k}"], [f"h{k}"]),
                  helper.make_node("MatMul", [f"h{k}", f"w{k}"], [f"mm{k}"]),
                  helper.make_node("Add", [f"mm{k}", f"bias{k}"], [f"proj{k}"]),
                  helper.make_node("Add", [f"proj{k}", stream], [f"sum{k}"])]
        inits.update({f"g{k}": rand(width) + 1, f"b{k}": rand(width), f"bias{k}": rand(width),
                      f"w{k}": rand(width, width) / 3})
        stream = f"sum{k}"
    nodes.append(helper.make_node("LayerNormalization", [stream, "g2", "b2"], ["y"]))
    inits.update(g2=rand(width) + 1, b2=rand(width))
    return nodes, inits


def gelu_nodes(x: str, y: str, tanh: bool) -> list:
    """GELU in its erf or tanh form, as exporters write it; reads GELU_CONSTANTS."""
    if tanh:
        return [helper.make_node("Pow", [x, "three"], ["cube"]),
                helper.make_node("Mul", ["k", "cube"], ["kcube"]),
                helper.make_node("Add", [x, "kcube"], ["inner"]),
                helper.make_node("Mul", ["inner", "sqrt_2_pi"], ["arg"]),
                helper.make_node("Tanh", ["arg"], ["t"]),
                helper.make_node("Add", ["t", "one"], ["onep"]),
                helper.make_node("Mul", [x, "half"], ["xh"]),
                helper.make_node("Mul", ["xh", "onep"], [y])]
    return [helper.make_node("Div", [x, "sqrt2"], ["s"]),
            helper.make_node("Erf", ["s"], ["e"]),
            helper.make_node("Add", ["e", "one"], ["onep"]),
            helper.make_node("Mul", [x, "onep"], ["xp"]),
            helper.make_node("Mul", ["xp", "half"], [y])]


GELU_CONSTANTS = {name: np.array(value, np.float32) for name, value in {
    "three": 3.0, "k": 0.044715, "sqrt_2_pi": np.sqrt(2 / np.pi), "one": 1.0, "half": 0.5,
    "sqrt2": np.sqrt(2.0)}.items()}
