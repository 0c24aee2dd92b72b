"""Constant cos/sin caches for onnxruntime's RotaryEmbedding, where positions are bounded.

Exporters compute a rotary embedding's cos and sin per token at run time: a row of a constant
table gathered by position ids (Phi, GPT-NeoX, GPT-J), then duplicated for the pairs, cast and
given a heads axis.  onnxruntime's op wants the table itself, one row per position, and the
position ids.  When every non-constant input of the computation is the ids of such a gather,
the table's row count bounds the positions, so the computation can run once at compile time
on the ids 0..rows−1: the result is the cache, and the ids go to the op as they are.  Nothing
about the ops in between is assumed: the cache is checked on other ids against the
computation itself, so a computation that mixes rows is refused, not miscompiled.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..ir import Graph, Node, Value
from ..ir.dtypes import from_numpy
from ..ir.exporter import node_to_proto
from ..ir.lazy_tensors import values_of

MAX_CHAIN = 24            # ops between a table and the position ids it is computed from
MAX_CACHE_BYTES = 256 << 20
# Ops that may lie between the ids and the table: none of them reads anything else at run time.
_CHAIN_OPS = frozenset({"Gather", "Cast", "Cos", "Sin", "Neg", "Identity", "Mul", "Div", "Add",
                        "Sub", "Unsqueeze", "Squeeze", "Concat", "Expand", "Reshape", "Tile",
                        "Transpose", "Slice"})
# ids the cache is checked on: a [2, 3] batch, not in order, repeats allowed
_CHECK_IDS = np.array([[5, 0, 3], [1, 7, 2]])


@dataclass(frozen=True)
class GatheredCaches:
    """The full-width cos and sin tables, one row per position, and the ids that pick them."""

    position_ids: Value
    cos: np.ndarray       # [positions, rotary width]
    sin: np.ndarray


def gathered_caches(graph: Graph, x: Value, cos: Value, sin: Value, seq_axis: int
                    ) -> GatheredCaches | None:
    """The caches when cos and sin are computed from one [batch, seq] ids tensor that only
    indexes constant tables (whose rows bound the positions), else None."""
    found = [_computation(table) for table in (cos, sin)]
    if any(f is None for f in found):
        return None
    (cos_nodes, cos_ids, cos_rows), (sin_nodes, sin_ids, sin_rows) = found
    if cos_ids is not sin_ids or cos_rows != sin_rows:
        return None
    ids, rows = cos_ids, cos_rows
    if ids.shape is None or len(ids.shape) != 2 or ids.elem_type not in (
            onnx.TensorProto.INT64, onnx.TensorProto.INT32) or x.shape is None or \
            tuple(ids.shape) != (x.shape[0], x.shape[seq_axis]) or ids.shape[0] is None:
        return None
    width = cos.shape[-1] if cos.shape else None
    if not isinstance(width, int) or rows * width * 2 * 4 > MAX_CACHE_BYTES:
        return None
    nodes = _in_order(graph, cos_nodes | sin_nodes)
    dtype = onnx.helper.tensor_dtype_to_np_dtype(ids.elem_type)
    every = _run(graph, nodes, ids, [cos, sin], np.arange(rows, dtype=dtype)[None, :])
    if every is None:
        return None
    tables = [_rows(table, rows, width) for table in every]
    if any(t is None for t in tables):
        return None
    check_ids = (_CHECK_IDS % rows).astype(dtype)
    checked = _run(graph, nodes, ids, [cos, sin], check_ids)
    if checked is None or not all(
            table.size == check_ids.size * width
            and np.array_equal(table.reshape(*check_ids.shape, width), full[check_ids])
            for table, full in zip(checked, tables)):
        return None
    return GatheredCaches(ids, tables[0], tables[1])


def _computation(table: Value) -> tuple[set[Node], Value, int] | None:
    """(the ops computing ``table``, the ids they gather by, the gathered tables' row count),
    or None when anything else than those ids and constants feeds it."""
    nodes: set[Node] = set()
    sources: set[tuple[Value, int]] = set()
    stack = [table]
    while stack:
        value = stack.pop()
        if value.is_constant:
            continue
        node = value.producer
        if node is None or node.domain or node.op_type not in _CHAIN_OPS or \
                node.body is not None or len(nodes) >= MAX_CHAIN:
            return None
        if node in nodes:
            continue
        nodes.add(node)
        if node.op_type == "Gather" and node.inputs[0].is_constant and \
                not node.inputs[1].is_constant:
            data = node.inputs[0].constant_data()
            if node.attrs.get("axis", 0) != 0 or data.ndim < 1:
                return None
            sources.add((node.inputs[1], int(data.shape[0])))
            continue
        stack.extend(v for v in node.inputs if v is not None)
    if len(sources) != 1:
        return None
    (ids, rows), = sources
    return nodes, ids, rows


def _in_order(graph: Graph, nodes: set[Node]) -> list[Node]:
    return [n for n in graph.nodes if n in nodes]


def _run(graph: Graph, nodes: list[Node], ids: Value, outputs: list[Value],
         feed: np.ndarray) -> list[np.ndarray] | None:
    """The computation of ``outputs`` with ``ids`` set to ``feed`` (onnx's reference
    evaluator, so no declared size of the model is held against the new ones)."""
    constants, seen = [], set()
    for node in nodes:
        for value in node.inputs:
            if value is not None and value.is_constant and value.name not in seen:
                seen.add(value.name)
                constants.append(numpy_helper.from_array(
                    np.asarray(values_of(value.constant_data())), value.name))
    body = helper.make_graph(
        [node_to_proto(n) for n in nodes], "rotary_cache",
        [helper.make_tensor_value_info(ids.name, from_numpy(feed.dtype), None)],
        [helper.make_tensor_value_info(v.name, onnx.TensorProto.UNDEFINED, None)
         for v in outputs], constants)
    opsets = dict(graph.opset_imports)
    opsets.setdefault("", 18)
    model = helper.make_model(body, opset_imports=[helper.make_opsetid(d, v)
                                                   for d, v in opsets.items()])
    model.ir_version = 10
    from onnx.reference import ReferenceEvaluator  # local: importing it costs every run 40 ms

    try:
        with np.errstate(all="ignore"):
            return [np.asarray(a) for a in ReferenceEvaluator(model).run(None, {ids.name: feed})]
    except Exception:  # noqa: BLE001 - any failure means "no constant cache"
        return None


def _rows(table: np.ndarray, rows: int, width: int) -> np.ndarray | None:
    """The table computed for ids 0..rows−1 as [rows, width], when that is its size."""
    if table.size != rows * width or table.shape[-1] != width:
        return None
    return table.reshape(rows, width)
