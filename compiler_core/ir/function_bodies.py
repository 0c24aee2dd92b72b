"""Fused bodies and calls of model-local functions, sized, as graphs the analyses can price.

A model GraphLab wrote holds its fused nodes as calls of model-local functions (`exporter`);
read back, such a call is a node without a body, and so is a call of any other model's
functions.  The analyses price a fused node by its body, so `sized_bodies` gives every call,
in the analysis's copy of the graph, the body its function describes, instantiated at the
call's input types with shapes inferred inside.  A fused node whose body still has unsized
values (the graph was fused before its dims were bound) gets the same treatment, from the
function the exporter would write for it.  Shape arithmetic inside a body reads the outer
values it is given (a reshape target built from the input's dims): ``constants`` gives
those the analysis learnt by folding, so a body is sized as the flat graph would be.  The
graph the user opened is not changed: a call stays a call for the passes and the exporter.

Control-flow bodies stay GraphProtos in the IR (`subgraphs`); `body_graph` imports one with
the outer values it reads typed from the enclosing graph, for the same pricing.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..errors import GraphLabError
from . import attributes
from .dtypes import to_numpy
from .graph import Graph
from .node import Node
from .proto_types import LIGHT_WEIGHT_BYTES, to_value_info
from .value import Value

FunctionKey = tuple[str, str, str]
Constants = Callable[[str], "np.ndarray | None"]
Prepare = Callable[[Graph], Graph]
MAX_DEPTH = 8       # functions calling functions: deeper than this is left unpriced
MAX_ROUNDS = 4      # calls sized, their outputs carried downstream, the next calls sized
_IR_VERSION = 10


def calls_function(graph: Graph, node: Node) -> bool:
    return node.body is None and (node.domain, node.op_type, node.overload) in graph.functions


def body_of(graph: Graph, node: Node) -> Graph | None:
    """What ``node`` computes as a graph whose inputs and outputs are the node's, in order:
    its fused body, or the body of the model-local function it calls, typed at the call's
    inputs; None for any other node (or a function that does not import)."""
    if node.body is not None:
        return node.body
    if not calls_function(graph, node):
        return None
    function, functions = _function_of(graph, node)
    return instantiate(function, node, functions)


def _needs_body(graph: Graph, node: Node) -> bool:
    if node.body is not None:
        return not _is_static(node.body)
    return calls_function(graph, node)


def _is_static(body: Graph) -> bool:
    return all(v is None or not v.is_tensor or v.static_shape() is not None
               for node in body.nodes for v in node.outputs) and \
        all(node.body is None or _is_static(node.body) for node in body.nodes)


def needs_bodies(graph: Graph) -> bool:
    """True if the graph calls a model-local function or holds an unsized fused body."""
    return any(_needs_body(graph, node) for node in graph.nodes)


def sized_bodies(graph: Graph, constants: Constants | None = None,
                 prepare: Prepare | None = None) -> Graph:
    """``graph`` itself when every fused body is sized and it calls no function; otherwise a
    copy in which each call has its function's body and each unsized fused body is sized
    again (a body that cannot be instantiated is left as it was).  ``prepare`` finishes each
    instantiated body (the analyses fold its shape arithmetic to learn its sizes)."""
    if not needs_bodies(graph):
        return graph
    from .shape_inference import infer_shapes   # both import this module's callers
    copy = graph.copy()
    lookup = _constants_of(copy, constants)
    sources = {node.id: _function_of(copy, node) for node in copy.nodes
               if _needs_body(copy, node)}
    tried: dict[int, tuple] = {}
    for _ in range(MAX_ROUNDS):
        sharpened = False
        for node in copy.nodes:
            signature = tuple(None if v is None else (v.elem_type, v.shape) for v in node.inputs)
            if node.id not in sources or tried.get(node.id) == signature:
                continue
            tried[node.id] = signature
            function, functions = sources[node.id]
            body = instantiate(function, node, functions, lookup, prepare)
            if body is not None:
                node.body = body
                sharpened |= _sharpen_outputs(node)
        if not sharpened:
            break
        infer_shapes(copy)    # what the calls' outputs now say, carried downstream
    return copy


def _function_of(graph: Graph, node: Node
                 ) -> tuple[onnx.FunctionProto, dict[FunctionKey, onnx.FunctionProto]]:
    """The function a call calls, or the one the exporter writes for a fused body, and the
    functions its body may call."""
    from .exporter import body_function   # the exporter imports this module's callers
    functions = dict(graph.functions)
    if node.body is None:
        return functions[(node.domain, node.op_type, node.overload)], functions
    function, inner = body_function(graph, node)
    functions.update(((f.domain, f.name, f.overload), f) for f in inner)
    return function, functions


def _sharpen_outputs(node: Node) -> bool:
    """Give the call's outputs the dims its body sized (where they only named them)."""
    changed = False
    for outer, inner in zip(node.outputs, node.body.outputs):
        if outer is None or inner.shape is None or not outer.is_tensor:
            continue
        if outer.shape is None or len(outer.shape) != len(inner.shape):
            sharper = inner.shape
        else:
            sharper = tuple(theirs if isinstance(theirs, int) and not isinstance(mine, int)
                            else mine for mine, theirs in zip(outer.shape, inner.shape))
        if sharper != outer.shape:
            outer.shape, changed = sharper, True
        if outer.elem_type is None and inner.elem_type is not None:
            outer.elem_type, changed = inner.elem_type, True
    return changed


def _constants_of(graph: Graph, learnt: Constants | None) -> Constants:
    """A value's small constant data: the graph's own, else what the caller learnt."""
    def lookup(name: str) -> "np.ndarray | None":
        found = _small_constant(graph.values.get(name))
        return found if found is not None or learnt is None else learnt(name)
    return lookup


def instantiate(function: onnx.FunctionProto, call: Node,
                functions: dict[FunctionKey, onnx.FunctionProto],
                constants: Constants | None = None, prepare: Prepare | None = None,
                depth: int = 0) -> Graph | None:
    """The function's body as a graph whose inputs have the call's input types (the small
    constants among them as initializers), or None when it does not import (the call is
    then priced as unknown)."""
    body = onnx.GraphProto(name=function.name)
    for index, name in enumerate(function.input):
        value = call.inputs[index] if index < len(call.inputs) else None
        known = constants(value.name) if constants is not None and value is not None else None
        if known is not None:   # shape arithmetic inside needs its values (split sizes, ...)
            body.initializer.append(_tensor(name, known, value.elem_type))
        else:
            body.input.append(_typed(name, value))
    defaults = {a.name: a for a in function.attribute_proto}
    for proto in function.node:
        node = body.node.add()
        node.CopyFrom(proto)
        _bind_attributes(node, call, defaults)
    body.output.extend(onnx.ValueInfoProto(name=name) for name in function.output)
    graph = _import(body, function.opset_import, functions)
    if graph is None:
        return None
    if prepare is not None:
        graph = prepare(graph)
    if depth < MAX_DEPTH:
        _attach(graph, functions, prepare, depth + 1)
    return graph


def _attach(graph: Graph, functions: dict[FunctionKey, onnx.FunctionProto],
            prepare: Prepare | None, depth: int) -> None:
    """Calls inside an instantiated body get their functions' bodies too."""
    lookup = _constants_of(graph, None)
    for node in graph.nodes:
        key = (node.domain, node.op_type, node.overload)
        if node.body is None and key in functions:
            node.body = instantiate(functions[key], node, functions, lookup, prepare, depth)


def body_graph(body: onnx.GraphProto, outer: Sequence[Value],
               input_types: Sequence[Value | None] = (),
               opsets: dict[str, int] | None = None,
               functions: dict[FunctionKey, onnx.FunctionProto] | None = None
               ) -> Graph | None:
    """An If/Loop/Scan body as a graph: the outer values it reads (``outer``, the node's
    implicit inputs) become typed inputs, and an input the body leaves untyped takes the type
    of ``input_types[i]`` where one is given.  None when it does not import."""
    proto = onnx.GraphProto()
    proto.CopyFrom(body)
    for index, info in enumerate(proto.input):
        given = input_types[index] if index < len(input_types) else None
        if given is not None and not _shaped(info):
            info.CopyFrom(_typed(info.name, given))
    declared = {i.name for i in proto.input} | {t.name for t in proto.initializer}
    proto.input.extend(_typed(v.name, v) for v in outer if v.name not in declared)
    opset_ids = [helper.make_opsetid(d, v) for d, v in (opsets or {}).items()]
    graph = _import(proto, opset_ids, functions or {})
    if graph is not None and functions:
        _attach(graph, functions, None, depth=1)
    return graph


def _import(body: onnx.GraphProto, opset_ids, functions) -> Graph | None:
    from .importer import from_proto   # the importer imports this module's callers
    model = helper.make_model(body, opset_imports=list(opset_ids))
    model.ir_version = _IR_VERSION
    model.functions.extend(functions.values())
    try:
        return from_proto(model, owned=True)
    except (GraphLabError, onnx.checker.ValidationError, ValueError, KeyError):
        return None


def _small_constant(value: Value | None) -> "np.ndarray | None":
    """The values of a constant of at most LIGHT_WEIGHT_BYTES (weights stay unread)."""
    if value is None or not value.is_constant:
        return None
    data = value.constant_data()
    if data is None or data.nbytes > LIGHT_WEIGHT_BYTES:
        return None
    return np.asarray(value.constant_value())


def _tensor(name: str, array: np.ndarray, elem_type: int | None) -> onnx.TensorProto:
    tensor = numpy_helper.from_array(array, name)
    if elem_type and tensor.data_type != elem_type:
        tensor = numpy_helper.from_array(array.astype(to_numpy(elem_type)), name)
    return tensor


def _typed(name: str, value: Value | None) -> onnx.ValueInfoProto:
    if value is None:
        return onnx.ValueInfoProto(name=name)
    info = to_value_info(value)
    info.name = name
    return info


def _shaped(info: onnx.ValueInfoProto) -> bool:
    kind = info.type.WhichOneof("value")
    if kind != "tensor_type":
        return kind is not None
    return info.type.tensor_type.elem_type != 0 and info.type.tensor_type.HasField("shape")


def _bind_attributes(node: onnx.NodeProto, call: Node,
                     defaults: dict[str, onnx.AttributeProto]) -> None:
    """Replace attribute references (ref_attr_name) by the call's attribute or the
    function's default; one with neither is left out (the op's own default applies)."""
    kept = []
    for attr in node.attribute:
        if not attr.ref_attr_name:
            kept.append(attr)
            continue
        ref = attr.ref_attr_name
        if ref in call.attrs:
            bound = attributes.to_proto(attr.name, call.attrs[ref], call.attr_types.get(ref))
        elif ref in defaults:
            bound = onnx.AttributeProto()
            bound.CopyFrom(defaults[ref])
            bound.name = attr.name
        else:
            continue
        kept.append(bound)
    del node.attribute[:]
    node.attribute.extend(kept)
