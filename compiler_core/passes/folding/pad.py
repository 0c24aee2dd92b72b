"""Folding a constant zero Pad into the convolution or pooling op that reads it."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ...ir import Graph, Node, Value
from ...wording import plural
from ..framework.base import Pass, PassContext, PassResult
from ..analyses.constants import constant_ints, ints_input_or_attr
from ..framework.rewrite import replace_node
from ..framework.pass_registry import register_pass

RULE = "fold_pad"
# Ops whose outputs are never negative: a zero pad in front of MaxPool changes nothing after them.
NON_NEGATIVE_OPS = ("Relu", "Sigmoid", "Abs", "Exp", "Softplus")

Pads = tuple[int, ...]   # ONNX layout over the spatial axes: all begins, then all ends
Attrs = dict


@register_pass
class FoldPad(Pass):
    """Fold a Pad that adds zeros around the spatial axes into the `pads` of the Conv,
    ConvTranspose or pooling op reading it, so the padded copy of the activation is never made.

    Exporters write explicit padding (PyTorch's ZeroPad2d and F.pad, TF-style "same" padding)
    as a Pad node in front of a convolution that has its own `pads` attribute.  A Conv pads with
    zeros too, so the two pads simply add up.  The fold is declined, with the reason, whenever
    it would change results: a Pad that repeats border values (reflect/edge/wrap) or fills with
    something other than zero, pads the batch or channel axis, crops (negative pads), or whose
    pads are only known at run time; a MaxPool (it pads with −∞) unless its input is known to
    be non-negative; an AveragePool that leaves its own padding out of the average while the
    Pad's zeros would count; a ConvTranspose whose `pads` cannot absorb the input padding; or
    another reader that needs the padded tensor itself.
    """

    name = "fold_pad"
    family = "folding"

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        result = PassResult()
        # last first: a Pad that feeds another Pad becomes a candidate once that one is folded
        for pad in reversed(graph.nodes_of_type("Pad")):
            readers = pad.outputs[0].users()
            if not any(r.op_type in READERS and not r.domain for r in readers):
                continue  # not a candidate: no convolution or pooling op reads it
            plans = _plan(pad, readers)
            if isinstance(plans, str):
                result.decline(pad, RULE, plans)
                continue
            for reader, attrs in plans:
                node = replace_node(graph, ctx, RULE, reader, reader.op_type,
                                    [pad.inputs[0], *reader.inputs[1:]], attrs, absorbed=[pad])
                node.attr_types = {k: t for k, t in reader.attr_types.items() if k in attrs}
            result.rewrites += 1
        if result.rewrites:
            result.notes.append(f"folded {plural(result.rewrites, 'zero Pad node')} into the "
                                f"pads of the convolution or pooling op after them")
        return result


def _plan(pad: Node, readers: list[Node]) -> list[tuple[Node, Attrs]] | str:
    """Each reader with its new attributes once the Pad is gone, or why the fold is wrong."""
    padding = _spatial_padding(pad)
    if isinstance(padding, str):
        return padding
    padded = pad.outputs[0]
    if padded.is_graph_output:
        return f"its output {padded.name!r} is a graph output, so the padded tensor must exist"
    plans = []
    for reader in readers:
        fold = READERS.get(reader.op_type) if not reader.domain else None
        if fold is None:
            return (f"{padded.name!r} is also read by {reader.op_type} '{reader.name}', which "
                    f"needs the padded tensor itself")
        if [i for node, i in padded.uses if node is reader] != [0]:
            return (f"{reader.op_type} '{reader.name}' reads the padded tensor as another "
                    f"input than its data input")
        attrs = fold(reader, padding, pad.inputs[0], padded)
        if isinstance(attrs, str):
            return f"{reader.op_type} '{reader.name}': {attrs}"
        plans.append((reader, attrs))
    return plans


# --------------------------------------------------------------------------- the Pad
def _spatial_padding(pad: Node) -> Pads | str:
    """The Pad's pads over the spatial axes (axes 2…), or why it is not a plain zero padding."""
    mode = pad.attr("mode", "constant")
    if mode != "constant":
        return (f"mode {mode!r} repeats values from the tensor's border, while convolution and "
                f"pooling pads are zeros")
    fill = _fill_value(pad)
    if isinstance(fill, str):
        return fill
    if np.any(fill != 0):
        return (f"it pads with {fill.reshape(-1)[0]:g}, but convolution and pooling ops pad "
                f"with zeros")
    full = _full_pads(pad)
    if isinstance(full, str):
        return full
    rank = len(full) // 2
    if any(p < 0 for p in full):
        return "it has negative pads, which crop the tensor; convolution pads can only add"
    if rank < 3 or full[0] or full[1] or full[rank] or full[rank + 1]:
        return ("it pads the batch or channel axis; convolution and pooling ops pad only the "
                "spatial axes")
    return full[2:rank] + full[rank + 2:]


def _fill_value(pad: Node) -> np.ndarray | str:
    if "value" in pad.attrs:  # before opset 11
        return np.asarray(pad.attrs["value"])
    given = pad.input(2)
    if given is None:
        return np.zeros(())
    value = given.constant_value()
    if value is None:
        return f"its fill value {given.name!r} is computed at run time"
    return value


def _full_pads(pad: Node) -> Pads | str:
    """Begin and end pads of every axis, with opset 18's ``axes`` input expanded."""
    pads = ints_input_or_attr(pad, 1, "paddings" if "paddings" in pad.attrs else "pads")
    if pads is None:
        return ("its pads are computed at run time (bind the input sizes, e.g. --bind, so "
                "constant folding can compute them)")
    if pad.input(3) is None:
        return pads
    axes, rank = constant_ints(pad.input(3)), pad.inputs[0].rank
    if axes is None or rank is None:
        return "its axes, or the rank of its input, are only known at run time"
    full = [0] * (2 * rank)
    for k, axis in enumerate(axes):
        full[axis % rank], full[rank + axis % rank] = pads[k], pads[len(axes) + k]
    return tuple(full)


# --------------------------------------------------------------------------- the readers
def _own_pads(node: Node, padded: Value, kernel: tuple[int, ...] | None,
              spatial: int) -> Pads | str:
    """The reader's own pads as explicit numbers, turning auto_pad into what it computes."""
    auto_pad = node.attr("auto_pad", "NOTSET")
    if auto_pad == "NOTSET":
        return tuple(node.attr("pads", (0,) * (2 * spatial)))
    if auto_pad == "VALID":
        return (0,) * (2 * spatial)
    sizes = padded.static_shape()
    strides = node.attr("strides", (1,) * spatial)
    if sizes is None or kernel is None or any(d != 1 for d in node.attr("dilations", ())):
        return (f"auto_pad {auto_pad} computes its pads from the input size, and that size, "
                f"the kernel size or a dilation of 1 is not known here")
    if any(k < s for k, s in zip(kernel, strides)):
        return f"auto_pad {auto_pad} with a kernel smaller than the stride pads nothing explicit"
    totals = [(math.ceil(n / s) - 1) * s + k - n
              for n, k, s in zip(sizes[2:], kernel, strides)]
    # SAME_UPPER puts the odd extra pad at the end, SAME_LOWER at the beginning
    begins = [t // 2 if auto_pad == "SAME_UPPER" else t - t // 2 for t in totals]
    return tuple(begins) + tuple(t - b for t, b in zip(totals, begins))


def _with_pads(node: Node, pads: Pads, **changes) -> Attrs:
    attrs = {k: v for k, v in node.attrs.items() if k != "auto_pad"}
    return {**attrs, "pads": tuple(int(p) for p in pads), **changes}


def _add(a: Pads, b: Pads) -> Pads:
    return tuple(x + y for x, y in zip(a, b))


def _conv_kernel(conv: Node) -> tuple[int, ...] | None:
    if "kernel_shape" in conv.attrs:
        return tuple(conv.attrs["kernel_shape"])
    shape = conv.inputs[1].static_shape()
    return None if shape is None else tuple(shape[2:])


def _into_conv(conv: Node, padding: Pads, data: Value, padded: Value) -> Attrs | str:
    """Conv pads with zeros: the two paddings add up."""
    own = _own_pads(conv, padded, _conv_kernel(conv), len(padding) // 2)
    return own if isinstance(own, str) else _with_pads(conv, _add(own, padding))


def _into_conv_transpose(conv: Node, padding: Pads, data: Value, padded: Value) -> Attrs | str:
    """Zero rows in a ConvTranspose's input widen its output by stride × pad on that side, and
    ConvTranspose's pads crop its output: the fold is exact when the crop is at least that wide
    (then the crop shrinks by stride × pad)."""
    if conv.attr("auto_pad", "NOTSET") != "NOTSET" or "output_shape" in conv.attrs:
        return ("auto_pad or output_shape makes it compute its own crop from the padded input "
                "size")
    spatial = len(padding) // 2
    own = tuple(conv.attr("pads", (0,) * (2 * spatial)))
    strides = tuple(conv.attr("strides", (1,) * spatial)) * 2
    crop = tuple(c - s * p for c, s, p in zip(own, strides, padding))
    if any(c < 0 for c in crop):
        return (f"zeros added to a ConvTranspose's input widen its output by stride × pad "
                f"({', '.join(str(s * p) for s, p in zip(strides, padding))}); its pads "
                f"{list(own)} crop the output and cannot widen it, so they would have to be "
                f"negative ({list(crop)})")
    return _with_pads(conv, crop)


def _pool_pads(pool: Node, padding: Pads, padded: Value) -> tuple[Pads, Pads] | str:
    """The pool's own explicit pads and the folded ones, which onnxruntime requires to be
    smaller than the kernel."""
    kernel = tuple(pool.attr("kernel_shape", ()))
    own = _own_pads(pool, padded, kernel, len(padding) // 2)
    if isinstance(own, str):
        return own
    folded = _add(own, padding)
    if any(p >= k for p, k in zip(folded, kernel * 2)):
        return (f"the folded pads {list(folded)} would not be smaller than the kernel "
                f"{list(kernel)}, which onnxruntime requires of pooling ops")
    return own, folded


def _into_average_pool(pool: Node, padding: Pads, data: Value, padded: Value) -> Attrs | str:
    """The Pad's zeros are part of every average; the pool must count its pads too."""
    pads = _pool_pads(pool, padding, padded)
    if isinstance(pads, str):
        return pads
    own, folded = pads
    if not pool.attr("count_include_pad", 0) and any(own):
        return ("it leaves its own pads out of the average (count_include_pad=0), but the "
                "Pad's zeros are counted: one pads attribute cannot do both")
    return _with_pads(pool, folded, count_include_pad=1)


def _into_max_pool(pool: Node, padding: Pads, data: Value, padded: Value) -> Attrs | str:
    """MaxPool pads with −∞: a zero pad changes no maximum only if the values are ≥ 0."""
    if len(pool.outputs) > 1 and pool.outputs[1] is not None and (
            pool.outputs[1].uses or pool.outputs[1].is_graph_output):
        return "its Indices output is read, and the indices count positions in the padded tensor"
    if not _non_negative(data):
        made_by = f"{data.producer.op_type} '{data.producer.name}'" if data.producer else "input"
        return (f"MaxPool pads with -inf but the Pad adds zeros: a window over the border gives "
                f"max(x, 0) before the fold and max(x) after, which differ where x < 0. "
                f"'{data.name}' ({made_by}) is not known to be non-negative (as after "
                f"{', '.join(NON_NEGATIVE_OPS)} or Clip with min >= 0)")
    pads = _pool_pads(pool, padding, padded)
    return pads if isinstance(pads, str) else _with_pads(pool, pads[1])


def _into_lp_pool(pool: Node, padding: Pads, data: Value, padded: Value) -> Attrs | str:
    """LpPool sums |x|^p over each window; zero pads add nothing, wherever they come from."""
    pads = _pool_pads(pool, padding, padded)
    return pads if isinstance(pads, str) else _with_pads(pool, pads[1])


def _non_negative(value: Value) -> bool:
    """True if every element of ``value`` is provably >= 0 from the op that makes it."""
    producer = value.producer
    if producer is None or producer.domain:
        constant = value.constant_value()
        return constant is not None and bool(np.all(constant >= 0))
    if producer.op_type in NON_NEGATIVE_OPS:
        return True
    if producer.op_type == "Clip":
        low = producer.input(1).constant_value() if producer.input(1) is not None else None
        low = producer.attrs.get("min", low)  # an attribute before opset 11
        return low is not None and float(np.asarray(low)) >= 0
    return False


READERS: dict[str, Callable[[Node, Pads, Value, Value], Attrs | str]] = {
    "Conv": _into_conv,
    "ConvTranspose": _into_conv_transpose,
    "AveragePool": _into_average_pool,
    "MaxPool": _into_max_pool,
    "LpPool": _into_lp_pool,
}
