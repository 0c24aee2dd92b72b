"""Shared by the pass tests: tiny graphs built with onnx.helper, and checked pipeline runs."""

from __future__ import annotations

from collections import Counter

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from compiler_core.ir import Graph, load_model
from compiler_core.passes import PassManager, PipelineResult, resolve_pipeline
from compiler_core.records import to_json
from graphlab.samples import resolve_model

F = TensorProto.FLOAT
I64 = TensorProto.INT64

# Symbolic dims bound when a test specializes a sample (small sizes keep the checks fast).
SAMPLE_BINDINGS = {
    "bert_tiny_op13": {"batch": 1, "seq": 8},
    "bert_tiny_op20": {"batch": 1, "seq": 8},
    "bert_tiny_dynamo": {"batch": 1, "seq": 8},
    "gpt2_tiny": {"batch": 1, "seq": 8},
    "mobilenet_tiny": {"batch": 1, "height": 32, "width": 32},
    "cnn_bn": {"batch": 1},
    "mlp_dropout": {"batch": 2},
    "digits_cnn": {"batch": 1},
}


def tensor(name: str, elem_type: int = F, shape=None):
    return helper.make_tensor_value_info(name, elem_type, shape)


def build(nodes, inputs, outputs, initializers=None, opset: int = 17) -> Graph:
    """An IR graph from onnx.helper pieces; ``initializers`` maps names to numpy arrays."""
    inits = [numpy_helper.from_array(np.asarray(a), n) for n, a in (initializers or {}).items()]
    graph = helper.make_graph(nodes, "test", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return load_model(model.SerializeToString())


def run_checked(graph: Graph, pipeline, bindings=None) -> PipelineResult:
    """Run a pipeline with invariant checks and onnxruntime verification after every pass."""
    result = PassManager(pipeline, bindings=bindings, verify=True, check=True).run(graph)
    for snapshot in result.snapshots:
        assert snapshot.verify.ok, (snapshot.pass_name, to_json(snapshot.verify))
    return result


def o2_position(pass_name: str) -> int:
    """Where ``pass_name`` first runs in O2, counted from 1 as reports number passes."""
    return resolve_pipeline("O2").index(pass_name) + 1


def load_sample(name: str) -> Graph:
    return load_model(resolve_model(name))


def ops(graph: Graph) -> Counter:
    return Counter(node.op_type for node in graph.nodes)


def snapshot(result: PipelineResult, pass_name: str):
    return next(s for s in result.snapshots if s.pass_name == pass_name)
