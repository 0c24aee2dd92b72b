"""Evaluate one node on constant inputs at compile time, and predict its result size first.

Both questions are asked of a one-node ONNX model at the graph's opset: onnx's shape inference
reads the small constant inputs (a ConstantOfShape's shape, an Expand's target) and says how
big the result would be *before* anything is computed; onnx's reference evaluator then computes
it.  Per node that costs a fraction of a millisecond, so even a 1,000-node BERT folds quickly.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ...ir import Graph, Node, Value
from ...ir.dtypes import element_bits, from_numpy
from ...ir.exporter import node_to_proto
from ...ir.lazy_tensors import values_of
from ...ir.proto_types import value_from_type

# Inputs up to this size travel as data to shape inference (targets, shapes, indices); larger
# ones only as types, so a big weight is never serialised just to learn a shape.
SHAPE_DATA_BYTES = 4096
DEFAULT_OPSET = 18


class EvaluationError(Exception):
    """The node could not be evaluated or the result does not match its declared type."""


def _model(graph: Graph, node: Node, arrays: list,
           data_limit: int | None) -> onnx.ModelProto:
    """A model running ``node`` alone; inputs at most ``data_limit`` bytes become initializers
    (``arrays`` may hold lazy tensors: only those are read)."""
    inputs, initializers, seen = [], [], set()
    for value, array in zip(node.inputs, arrays):
        if value is None or value.name in seen:
            continue
        seen.add(value.name)
        if data_limit is not None and array.nbytes <= data_limit:
            initializers.append(numpy_helper.from_array(values_of(array), value.name))
        else:
            inputs.append(helper.make_tensor_value_info(value.name, from_numpy(array.dtype),
                                                        array.shape))
    outputs = [helper.make_tensor_value_info(v.name, onnx.TensorProto.UNDEFINED, None)
               for v in node.outputs if v is not None]
    body = helper.make_graph([node_to_proto(node)], "fold", inputs, outputs, initializers)
    opsets = dict(graph.opset_imports)
    opsets.setdefault("", DEFAULT_OPSET)
    model = helper.make_model(body, opset_imports=[helper.make_opsetid(d, v)
                                                   for d, v in opsets.items()])
    model.ir_version = 10
    return model


def predicted_bytes(graph: Graph, node: Node, arrays: list) -> int | None:
    """Bytes the node's outputs would take, or None if that cannot be known beforehand
    (``arrays``: the inputs' data, lazy tensors unread but the small ones)."""
    total = 0
    for value in node.outputs:
        if value is None:
            continue
        size = _value_bytes(value)
        if size is None:
            return _inferred_bytes(graph, node, arrays)
        total += size
    return total


def _value_bytes(value: Value) -> int | None:
    count = value.numel()
    if count is None or value.elem_type is None:
        return None
    return (count * element_bits(value.elem_type) + 7) // 8


def _inferred_bytes(graph: Graph, node: Node, arrays: list[np.ndarray | None]) -> int | None:
    model = _model(graph, node, arrays, SHAPE_DATA_BYTES)
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    except Exception:  # noqa: BLE001 - onnx raises many kinds; "unknown" is the answer
        return None
    sizes = [_value_bytes(value_from_type(o.name, o.type)) for o in inferred.graph.output]
    return None if not sizes or None in sizes else sum(sizes)


def evaluate(graph: Graph, node: Node, arrays: list[np.ndarray | None]) -> list[np.ndarray]:
    """The node's outputs computed from ``arrays`` (one per input, None for omitted ones)."""
    from onnx.reference import ReferenceEvaluator  # local: importing it costs every run 40 ms

    model = _model(graph, node, arrays, None)
    feeds = {v.name: a for v, a in zip(node.inputs, arrays) if v is not None}
    try:
        with np.errstate(all="ignore"):  # inf and nan are results like any other
            results = ReferenceEvaluator(model).run(None, feeds)
    except Exception as err:  # noqa: BLE001 - any evaluator failure means "do not fold"
        raise EvaluationError(f"evaluation failed: {str(err).strip().splitlines()[0][:200]}"
                              if str(err).strip() else type(err).__name__) from None
    produced = [v for v in node.outputs if v is not None]
    checked = [_check(value, array) for value, array in zip(produced, results)]
    by_name = {v.name: a for v, a in zip(produced, checked)}
    return [by_name[v.name] if v is not None else None for v in node.outputs]


def _check(value: Value, array) -> np.ndarray:
    """Refuse results that are not tensors or contradict the value's declared type or shape."""
    if not isinstance(array, (np.ndarray, np.generic)):
        raise EvaluationError(f"{value.name!r} is a {type(array).__name__}, not a tensor")
    array = np.asarray(array)
    if value.elem_type is not None and from_numpy(array.dtype) != value.elem_type:
        raise EvaluationError(f"the evaluator returned {array.dtype} for {value.name!r}, "
                              f"declared {value.describe_type()}")
    declared = value.shape
    if declared is not None and (len(declared) != array.ndim or any(
            isinstance(d, int) and d != n for d, n in zip(declared, array.shape))):
        raise EvaluationError(f"the evaluator returned shape {list(array.shape)} for "
                              f"{value.name!r}, declared {value.describe_type()}")
    return array
