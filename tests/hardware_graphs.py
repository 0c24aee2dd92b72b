"""Shared by the hardware-model tests: tiny IR graphs with hand-set shapes, and the samples."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from compiler_core.ir import Graph, Node, Value, load_model
from compiler_core.passes import PassManager
from compiler_core.passes.framework.base import PassContext
from compiler_core.passes.framework.rewrite import fuse_nodes
from graphlab.samples import list_samples

F = TensorProto.FLOAT
I64 = TensorProto.INT64

# Sizes bound when a test specializes a sample.
BINDINGS = {"batch": 1, "seq": 16, "height": 32, "width": 32}
SAMPLES = [sample.name for sample in list_samples()]


class Builder:
    """Builds an IR graph node by node, with every output's dtype and shape given."""

    def __init__(self):
        self.graph = Graph("test")

    def input(self, name: str, shape, elem_type: int = F) -> Value:
        return self.graph.add_input(Value(name, elem_type, tuple(shape)))

    def const(self, name: str, array) -> Value:
        return self.graph.add_initializer(name, np.asarray(array, dtype=np.float32))

    def node(self, op_type: str, inputs, shape, elem_type: int = F, domain: str = "",
             name: str | None = None, **attrs) -> Node:
        node = self.graph.add_node(op_type, inputs, 1, attrs=attrs, domain=domain, name=name)
        node.outputs[0].elem_type = elem_type
        node.outputs[0].shape = tuple(shape)
        return node

    def op(self, op_type: str, inputs, shape, **kwargs) -> Value:
        return self.node(op_type, inputs, shape, **kwargs).outputs[0]

    def outputs(self, *values: Value) -> Graph:
        self.graph.set_outputs(values)
        self.graph.check()
        return self.graph


def elementwise_chain() -> Graph:
    """y = relu(x * s + t) on a 4 x 16 float tensor, unfused: Mul, Add, Relu."""
    b = Builder()
    x = b.input("x", (4, 16))
    scaled = b.op("Mul", [x, b.const("s", 2.0)], (4, 16), name="mul")
    shifted = b.op("Add", [scaled, b.const("t", 1.0)], (4, 16), name="add")
    return b.outputs(b.op("Relu", [shifted], (4, 16), name="relu"))


def fuse_all(graph: Graph) -> Graph:
    """A copy of ``graph`` whose nodes are one fused node."""
    fused = graph.copy()
    fuse_nodes(fused, PassContext(pass_name="test"), fused.nodes, "FusedElementwise", "test")
    fused.check()
    return fused


def load_sample(name: str) -> Graph:
    return load_model(next(s.path for s in list_samples() if s.name == name))


def optimized_sample(name: str, pipeline: str = "O2") -> Graph:
    return PassManager(pipeline, bindings=BINDINGS).run(load_sample(name)).final
