"""Types and shapes for every value: onnx's shape inference first, then GraphLab's own rules.

onnx.shape_inference runs on a "light" export (big weights replaced by typed inputs) so that a
440 MB model is not serialised twice.  Where onnx gives up (custom-domain ops, fused nodes, some
data-dependent shapes) simple rules fill the gap: element-wise ops keep their input's shape,
binary ops broadcast.
"""

from __future__ import annotations

import onnx

from . import contrib_shapes, write_guard
from .graph import Graph
from .exporter import node_proto, to_model_proto
from .node import Node
from .proto_types import value_from_type
from .value import Value

# Ops whose first output has the type and shape of their first input.
SAME_AS_FIRST_INPUT = {
    "Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Ceil", "Celu", "Clip", "Cos",
    "Cosh", "Dropout", "Elu", "Erf", "Exp", "Floor", "Gelu", "HardSigmoid", "HardSwish",
    "Identity", "InstanceNormalization", "LayerNormalization", "LeakyRelu", "Log", "LogSoftmax",
    "LpNormalization", "Mish", "Neg", "PRelu", "Reciprocal", "Relu", "Round", "Selu", "Sigmoid",
    "Sign", "Sin", "Sinh", "Softmax", "Softplus", "Softsign", "Sqrt", "Tan", "Tanh",
    "ThresholdedRelu", "BatchNormalization", "Shrink", "QuickGelu", "FastGelu", "BiasGelu",
    "SkipLayerNormalization", "SkipSimplifiedLayerNormalization", "SimplifiedLayerNormalization",
    "BiasAdd",
}
# ai.onnx.ml preprocessing ops: the output keeps the input's shape (onnx types, not shapes,
# them); the value is the output dtype when it does not follow the input's.
ML_SAME_SHAPE = {"Scaler": onnx.TensorProto.FLOAT, "Normalizer": onnx.TensorProto.FLOAT,
                 "Binarizer": None, "Imputer": None, "LabelEncoder": None}
BROADCASTING = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mean", "Sum", "Mod",
                "BitShift", "And", "Or", "Xor", "Equal", "Less", "Greater", "LessOrEqual",
                "GreaterOrEqual", "Where"}
BOOL_RESULT = {"And", "Or", "Xor", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual",
               "Not", "IsNaN", "IsInf"}


MAX_ROUNDS = 4
SMALL_CONSTANT = 64   # elements: constant inputs a one-node inference reads (shapes, axes)


def infer_shapes(graph: Graph, refresh: bool = False,
                 first_model: onnx.ModelProto | None = None) -> None:
    """Fill in elem_type and shape of every value the rules can reach.

    onnx's inference and GraphLab's gap rules alternate: a rank GraphLab recovers (say, of a
    Reshape whose target shape is computed at run time) lets onnx type everything downstream.
    With ``refresh`` (after symbolic dims were bound), inferred shapes replace stale ones
    instead of only filling unknowns.  ``first_model``, a light proto of this very graph, saves
    exporting one for the first round (the importer passes the model it just parsed).
    """
    opset = graph.opset_imports.get("", graph.opset_imports.get("ai.onnx"))
    for round_index in range(MAX_ROUNDS):
        problem = _run_onnx_inference(graph, refresh=refresh and round_index == 0,
                                      model=first_model if round_index == 0 else None)
        if not sum(fill_gaps(node, opset) for node in graph.nodes):
            break
    # Judged on the last round: a first round's "input expected to have type but instead is
    # null" behind an op onnx does not type (ai.onnx.ml's Scaler) is onnx's gap, which the
    # rules have filled since, not the model's fault.  (Two "Inference error(s)": the error
    # is inside one of onnx's own function bodies.)
    if problem is not None and problem.count("Inference error(s)") == 1:
        _warn_once(graph, f"the model's shapes are inconsistent ({problem[:300]}); "
                          f"onnxruntime may refuse it — check how it was exported")


def _run_onnx_inference(graph: Graph, refresh: bool, model: onnx.ModelProto | None
                        ) -> str | None:
    """One round of onnx's inference merged into the graph; what its strict mode found
    wrong (None: nothing)."""
    light = model or to_model_proto(graph, weights="light", value_info=not refresh)
    try:
        inferred, problem = _onnx_inference(light)
    except Exception as err:  # noqa: BLE001 - onnx raises many kinds; inference is best effort
        _warn_once(graph, f"onnx shape inference failed ({err}); using GraphLab's rules")
        return None
    for info in list(inferred.graph.value_info) + list(inferred.graph.output):
        value = graph.values.get(info.name)
        if value is not None and value.producer is not None:
            _merge(value, value_from_type(info.name, info.type), refresh)
    return problem


def _onnx_inference(light: onnx.ModelProto) -> tuple[onnx.ModelProto, str | None]:
    """Strict inference first, so an inconsistent model is named; then best effort."""
    def infer(strict: bool) -> onnx.ModelProto:
        return onnx.shape_inference.infer_shapes(light, check_type=False, strict_mode=strict,
                                                 data_prop=True)
    try:
        return infer(strict=True), None
    except onnx.shape_inference.InferenceError as err:
        return infer(strict=False), " ".join(str(err).split())


def _warn_once(graph: Graph, message: str) -> None:
    if message not in graph.warnings:
        if write_guard._armed:
            write_guard.touch_graph(graph)
        graph.warnings.append(message)


def _merge(value: Value, found: Value, refresh: bool) -> None:
    if found.type_proto is not None:
        if value.type_proto is None and value.elem_type is None:
            value.type_proto = found.type_proto
        return
    if found.elem_type is not None and (refresh or value.elem_type is None):
        value.elem_type = found.elem_type
    if found.shape is None:
        return
    if value.shape is None or refresh or len(value.shape) != len(found.shape):
        value.shape = found.shape
        return
    value.shape = tuple(_better_dim(mine, theirs) for mine, theirs in zip(value.shape, found.shape))


def is_unnamed_dim(dim) -> bool:
    """A dim nobody named: unknown (None) or a name onnx's inference made up ('unk__7')."""
    return dim is None or isinstance(dim, str) and dim.startswith("unk__")


def _better_dim(mine, theirs):
    if isinstance(mine, int):
        return mine
    if isinstance(theirs, int):
        return theirs
    if is_unnamed_dim(mine):
        return theirs if theirs is not None else mine
    return mine


def fill_gaps(node: Node, opset: int | None = None) -> bool:
    """Apply GraphLab's simple rules to an output onnx could not type; True if it learnt more.
    onnxruntime's operators have rules of their own (`contrib_shapes`), for every output.
    A standard op whose inputs a rule has just typed gets onnx's rule for it alone (at
    ``opset``), so what follows one of onnxruntime's operators is typed in the same sweep (a
    model onnxruntime optimized alternates them: Conv, FusedConv, Conv, ...)."""
    if contrib_shapes.knows(node.op_type, node.domain):
        return contrib_shapes.infer_outputs(node)
    out = node.outputs[0] if node.outputs else None
    if out is None or out.type_proto is not None or (out.elem_type and out.shape is not None):
        return False
    first = node.inputs[0] if node.inputs else None
    if first is None:
        return False
    if opset is not None and node.domain in ("", "ai.onnx") and _one_node_inference(node, opset):
        return True
    before = (out.elem_type, out.shape)
    rank_rule = _RANK_RULES.get(node.op_type)
    if rank_rule is not None:
        out.elem_type = out.elem_type or first.elem_type
        if out.shape is None:
            rank = rank_rule(node)
            out.shape = None if rank is None else _shape_from_constant(node, rank)
    elif node.op_type in SAME_AS_FIRST_INPUT:
        out.elem_type = out.elem_type or first.elem_type
        out.shape = out.shape if out.shape is not None else first.shape
    elif node.domain == "ai.onnx.ml" and node.op_type in ML_SAME_SHAPE:
        out.elem_type = out.elem_type or ML_SAME_SHAPE[node.op_type] or first.elem_type
        out.shape = out.shape if out.shape is not None else first.shape
    elif node.op_type in BROADCASTING:
        present = [v for v in node.inputs if v is not None]
        typed = present[1] if node.op_type == "Where" and len(present) > 1 else first
        out.elem_type = out.elem_type or (onnx.TensorProto.BOOL if node.op_type in BOOL_RESULT
                                          else typed.elem_type)
        if out.shape is None:
            out.shape = broadcast_shapes([v.shape for v in present])
    return (out.elem_type, out.shape) != before


def _one_node_inference(node: Node, opset: int) -> bool:
    """onnx's inference for this node alone, from its inputs' types and its small constant
    inputs' values; True if it typed an output it had not."""
    if node.implicit_inputs or any(v is not None and (v.elem_type is None or v.shape is None)
                                   for v in node.inputs):
        return False      # a node with a subgraph, or an input still untyped
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, "")
        types = {v.name: onnx.helper.make_tensor_type_proto(v.elem_type, list(v.shape))
                 for v in node.inputs if v is not None}
        data = {v.name: onnx.numpy_helper.from_array(v.constant_value(), v.name)
                for v in node.inputs if v is not None and v.is_constant and _small(v)}
        inferred = onnx.shape_inference.infer_node_outputs(schema, node_proto(node), types,
                                                           data)
    except Exception:  # noqa: BLE001 - onnx raises varied errors; the other rules still apply
        return False
    learnt = False
    for value in node.outputs:
        found = inferred.get(value.name) if value is not None else None
        if found is None or value.type_proto is not None:
            continue
        typed = value_from_type(value.name, found)
        if typed.elem_type and value.elem_type is None:
            value.elem_type, learnt = typed.elem_type, True
        if typed.shape is not None and value.shape is None:
            value.shape, learnt = typed.shape, True
    return learnt


def _small(value: Value) -> bool:
    count = value.numel()
    return count is not None and count <= SMALL_CONSTANT


def broadcast_shapes(shapes: list[tuple | None]) -> tuple | None:
    """Numpy-style broadcast of shapes that may hold symbolic or unknown dims."""
    if any(s is None for s in shapes):
        return None
    rank = max((len(s) for s in shapes), default=0)
    result = []
    for axis in range(rank):
        dims = [s[len(s) - rank + axis] for s in shapes if len(s) - rank + axis >= 0]
        concrete = [d for d in dims if isinstance(d, int) and d != 1]
        if concrete:
            result.append(concrete[0])
        elif any(not isinstance(d, int) for d in dims):
            result.append(next(d for d in dims if not isinstance(d, int)))
        else:
            result.append(1)
    return tuple(result)


def _length_of(value: Value | None) -> int | None:
    """Number of entries of a 1-D shape-like input (its static length)."""
    if value is None or value.shape is None or len(value.shape) != 1:
        return None
    return value.shape[0] if isinstance(value.shape[0], int) else None


def _rank(value: Value | None) -> int | None:
    return None if value is None or value.shape is None else len(value.shape)


def _expand_rank(node: Node) -> int | None:
    target, data = _length_of(node.input(1)), _rank(node.inputs[0])
    return None if target is None or data is None else max(target, data)


def _gather_rank(node: Node) -> int | None:
    data, indices = _rank(node.inputs[0]), _rank(node.input(1))
    return None if data is None or indices is None else data + indices - 1


# Ops whose output *rank* GraphLab can tell even when onnx could not infer the dims (typically
# a shape computed at run time from Shape/Gather/Concat, as exporters emit for dynamic axes).
_RANK_RULES = {
    "Reshape": lambda n: _length_of(n.input(1)),
    "ConstantOfShape": lambda n: _length_of(n.inputs[0]),
    "Expand": _expand_rank,
    "Tile": lambda n: _rank(n.inputs[0]),
    "Slice": lambda n: _rank(n.inputs[0]),
    "Pad": lambda n: _rank(n.inputs[0]),
    "Range": lambda n: 1,
    "Gather": _gather_rank,
}


def _shape_from_constant(node: Node, rank: int) -> tuple:
    """Concrete dims where the shape input is a constant without 0/-1 placeholders."""
    shape_input = node.inputs[0] if node.op_type == "ConstantOfShape" else node.input(1)
    known = shape_input.constant_value() if shape_input is not None else None
    if node.op_type in ("Reshape", "ConstantOfShape") and known is not None:
        dims = [int(d) for d in known.reshape(-1)]
        if len(dims) == rank and all(d > 0 for d in dims):
            return tuple(dims)
    return (None,) * rank
