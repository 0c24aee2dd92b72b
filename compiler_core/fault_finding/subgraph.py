"""The reducer's candidates: sub-graphs of one ONNX model, written as ONNX protos.

The reducer works on the model's protos, not on GraphLab's IR: the export writes canonical
ONNX (a trailing empty optional input left out, for one), and the faults a user reduces often
live in exactly the spelling it would change.  A candidate is a choice over the original
graph — which values are its outputs, which computed values become new graph inputs (fed the
data they held when the whole model ran) or constants, which node outputs are bypassed by one
of the node's inputs, and what size its tensors are cut to — and ``Cut.build`` writes it:
the nodes the outputs need, the initializers they read, and the inputs' data.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import onnx
from onnx import helper, numpy_helper


@dataclass(frozen=True)
class Cut:
    """One candidate (see the module docstring).  ``bypass`` maps a value to the value its
    readers read instead; ``shrink`` maps an axis size to the smaller size every tensor fed to
    the candidate (graph inputs and initializers) is sliced to along axes of that size."""

    outputs: tuple[str, ...]
    inputs: frozenset[str] = frozenset()
    constants: frozenset[str] = frozenset()
    bypass: tuple[tuple[str, str], ...] = ()
    shrink: tuple[tuple[int, int], ...] = ()

    def but(self, **changes) -> "Cut":
        return replace(self, **changes)


@dataclass
class Built:
    """A candidate as onnxruntime takes it: the model and the data to feed it."""

    model: onnx.ModelProto
    feed: dict[str, np.ndarray]

    @property
    def data(self) -> bytes:
        return self.model.SerializeToString()


class Source:
    """The original model, its nodes' inputs (subgraph reads included), and the data every
    value held when the whole model ran with the optimizer off (``values``; empty when it does
    not run so: then no value can become an input, and only outputs are cut)."""

    def __init__(self, model: onnx.ModelProto, feed: dict[str, np.ndarray],
                 values: dict[str, np.ndarray]):
        self.model = model
        self.graph = model.graph
        self.nodes = list(self.graph.node)
        self.feed = feed
        self.values = values
        self.initializers = {t.name: t for t in self.graph.initializer}
        self.producer = {out: i for i, node in enumerate(self.nodes) for out in node.output
                         if out}
        self.reads = [_reads(node) for node in self.nodes]
        self.types = _types(model)

    # -- building -------------------------------------------------------------------------------
    def build(self, cut: Cut) -> Built:
        renamed = dict(cut.bypass)
        kept = self.needed(cut)
        inputs = {i.name for i in self.graph.input}
        graph_inputs, initializers, feed = [], [], {}
        for name in self._frontier(kept, cut, renamed):
            if name in self.initializers and name not in cut.inputs:
                initializers.append(self._shrunk_tensor(self.initializers[name], cut))
            elif name in cut.constants:
                initializers.append(numpy_helper.from_array(self._data(name, cut), name))
            elif name in inputs or name in cut.inputs:
                data = self._data(name, cut)
                feed[name] = data
                graph_inputs.append(helper.make_tensor_value_info(
                    name, helper.np_dtype_to_tensor_dtype(data.dtype), list(data.shape)))
        nodes = [self._node(self.nodes[i], renamed) for i in kept]
        graph = helper.make_graph(nodes, self.graph.name or "reduced", graph_inputs,
                                  [self._output_info(renamed.get(o, o)) for o in cut.outputs],
                                  initializers)
        if not cut.shrink:
            known = {v for n in nodes for v in n.output}
            graph.value_info.extend(v for v in self.graph.value_info if v.name in known
                                    and v.name not in cut.outputs)
        model = helper.make_model(graph, opset_imports=list(self.model.opset_import))
        model.ir_version = self.model.ir_version
        used_ops = {(n.domain, n.op_type) for n in nodes}
        model.functions.extend(f for f in self.model.functions
                               if (f.domain, f.name) in used_ops)
        return Built(model, feed)

    def needed(self, cut: Cut) -> list[int]:
        """The nodes the candidate's outputs need, in the original order."""
        renamed = dict(cut.bypass)
        stop = cut.inputs | cut.constants
        seen: set[int] = set()
        todo = [renamed.get(o, o) for o in cut.outputs]
        while todo:
            name = todo.pop()
            if name in stop:
                continue
            index = self.producer.get(name)
            if index is None or index in seen:
                continue
            seen.add(index)
            todo.extend(renamed.get(r, r) for r in self.reads[index])
        return sorted(seen)

    def _frontier(self, kept: list[int], cut: Cut, renamed: dict[str, str]) -> list[str]:
        """The names the kept nodes read (or the outputs are) that no kept node computes."""
        made = {out for i in kept for out in self.nodes[i].output if out}
        names: dict[str, None] = {}
        for name in [renamed.get(r, r) for i in kept for r in self.reads[i]] + \
                [renamed.get(o, o) for o in cut.outputs]:
            if name and name not in made:
                names[name] = None
        return list(names)

    def _node(self, node: onnx.NodeProto, renamed: dict[str, str]) -> onnx.NodeProto:
        if not renamed:
            return node
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        for slot, name in enumerate(copy.input):
            copy.input[slot] = renamed.get(name, name)
        return copy

    def _output_info(self, name: str) -> onnx.ValueInfoProto:
        elem = self.types.get(name)
        if elem is None and name in self.values:
            elem = helper.np_dtype_to_tensor_dtype(self.values[name].dtype)
        return helper.make_tensor_value_info(name, elem, None) if elem else \
            onnx.ValueInfoProto(name=name)

    # -- data -----------------------------------------------------------------------------------
    def _data(self, name: str, cut: Cut) -> np.ndarray:
        if name in self.feed:
            data = self.feed[name]
        elif name in self.values:
            data = self.values[name]
        elif name in self.initializers:
            data = numpy_helper.to_array(self.initializers[name])
        else:
            raise KeyError(name)
        return shrunk(np.asarray(data), dict(cut.shrink))

    def _shrunk_tensor(self, tensor: onnx.TensorProto, cut: Cut) -> onnx.TensorProto:
        if not cut.shrink or not any(d in dict(cut.shrink) for d in tensor.dims):
            return tensor
        return numpy_helper.from_array(shrunk(numpy_helper.to_array(tensor), dict(cut.shrink)),
                                       tensor.name)

    def dims(self, cut: Cut) -> list[int]:
        """Axis sizes of the tensors fed to the candidate, largest first (what may shrink)."""
        built = self.build(cut)
        sizes = {d for a in built.feed.values() for d in a.shape}
        sizes |= {d for t in built.model.graph.initializer for d in t.dims}
        return sorted((d for d in sizes if d > 1), reverse=True)


def shrunk(array: np.ndarray, sizes: dict[int, int]) -> np.ndarray:
    """``array`` sliced to ``sizes[d]`` along every axis of size d."""
    index = tuple(slice(0, sizes[d]) if d in sizes else slice(None) for d in array.shape)
    return np.ascontiguousarray(array[index]) if sizes else array


def _reads(node: onnx.NodeProto) -> list[str]:
    """The names a node reads: its inputs and the outer names its subgraphs use."""
    names = [n for n in node.input if n]
    for attr in node.attribute:
        for sub in ([attr.g] if attr.type == onnx.AttributeProto.GRAPH else
                    list(attr.graphs) if attr.type == onnx.AttributeProto.GRAPHS else []):
            names += _outer_names(sub)
    return names


def _outer_names(graph: onnx.GraphProto) -> list[str]:
    defined = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    outer = []
    for node in graph.node:
        outer += [n for n in _reads(node) if n not in defined]
        defined.update(node.output)
    return outer + [o.name for o in graph.output if o.name not in defined]


def _types(model: onnx.ModelProto) -> dict[str, int]:
    """Element types of the model's values, from onnx's shape inference where it can."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception:  # noqa: BLE001 - inference is a help here, not a requirement
        inferred = model
    graph = inferred.graph
    return {v.name: v.type.tensor_type.elem_type
            for v in list(graph.value_info) + list(graph.input) + list(graph.output)
            if v.type.HasField("tensor_type") and v.type.tensor_type.elem_type}
