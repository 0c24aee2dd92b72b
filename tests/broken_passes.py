"""Deliberately broken passes, loaded as a plugin (``--plugins tests/broken_passes.py``), for
the tests of ``graphlab bisect``: each breaks one node, and bisect must find that node."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from compiler_core.passes.framework.base import Pass, PassResult
from compiler_core.passes.framework.pass_registry import register_pass

# The nodes they break, by name in bert_tiny_op13 (the tests import these).
CHANGED_ADD = "/bert/encoder/layer.1/attention/self/value/Add"
DROPPED_TRANSPOSE = "/bert/encoder/layer.1/attention/self/Transpose_3"


@register_pass
class ChangeOneConstant(Pass):
    """Test pass: scales the constant one Add reads, as a bad constant fold would."""

    name = "test_change_one_constant"
    family = "test"

    def run(self, graph, ctx):
        node = graph.node_by_name(CHANGED_ADD)
        if node is None:
            return PassResult()
        slot = next(i for i, v in enumerate(node.inputs) if v is not None and v.is_constant)
        changed = graph.add_initializer("changed_bias",
                                        np.asarray(node.inputs[slot].constant_value()) * 1.5 + 0.1)
        node.replace_input(slot, changed)
        return PassResult(rewrites=1)


@register_pass
class DropTranspose(Pass):
    """Test pass: removes a Transpose, its readers reading its input instead."""

    name = "test_drop_transpose"
    family = "test"

    def run(self, graph, ctx):
        node = graph.node_by_name(DROPPED_TRANSPOSE)
        if node is None:
            return PassResult()
        graph.replace_all_uses(node.outputs[0], node.inputs[0])
        graph.remove_node(node)
        return PassResult(rewrites=1)


@register_pass
class RaiseOnErfAfterDiv(Pass):
    """Test pass: raises at an Erf that reads a Div, as a rewrite with a bad assumption would."""

    name = "test_raise_on_erf_after_div"
    family = "test"

    def run(self, graph, ctx):
        for node in graph.nodes_of_type("Erf"):
            producer = node.inputs[0].producer
            if producer is not None and producer.op_type == "Div":
                with ctx.working_on(node):
                    raise ValueError("an Erf after a Div is not handled")
        return PassResult()


@register_pass
class Float64ReluClip(Pass):
    """Test pass: a Relu under a float64 Clip in front of the first Erf — values the pass
    changes, in a model onnxruntime refuses at ORT_ENABLE_ALL (its Relu+Clip fusion builds an
    ill-typed node)."""

    name = "test_float64_relu_clip"
    family = "test"

    def run(self, graph, ctx):
        erfs = graph.nodes_of_type("Erf")
        if not erfs:
            return PassResult()
        erf = erfs[0]
        wide = graph.add_node("Cast", [erf.inputs[0]], attrs={"to": TensorProto.DOUBLE})
        relu = graph.add_node("Relu", [wide.outputs[0]])
        low = graph.add_initializer("planted_low", np.array(-1.0))
        high = graph.add_initializer("planted_high", np.array(4.0))
        clip = graph.add_node("Clip", [relu.outputs[0], low, high])
        narrow = graph.add_node("Cast", [clip.outputs[0]], attrs={"to": TensorProto.FLOAT})
        erf.replace_input(0, narrow.outputs[0])
        return PassResult(rewrites=1)
