"""A model at a glance: op histogram, signature, parameter count, opsets (`graphlab info`)."""

from __future__ import annotations

from collections import Counter

from .dtypes import dtype_name
from .graph import Graph
from .value import Value


def value_signature(value: Value) -> dict:
    """{name, shape, dtype} with symbolic dims as strings and unknown dims as null."""
    shape = None if value.shape is None else list(value.shape)
    dtype = (value.type_proto.WhichOneof("value") if value.type_proto is not None
             else dtype_name(value.elem_type))
    return {"name": value.name, "shape": shape, "dtype": dtype}


def op_histogram(graph: Graph) -> dict[str, int]:
    counts = Counter(node.qualified_op for node in graph.nodes)
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def summarize(graph: Graph) -> dict:
    return {
        "name": graph.name,
        "nodes": len(graph),
        "op_histogram": op_histogram(graph),
        "inputs": [value_signature(v) for v in graph.inputs],
        "outputs": [value_signature(v) for v in graph.outputs],
        "params": int(sum(v.stored.size for v in graph.initializers.values())),
        "initializers": len(graph.initializers),
        "opset": {(domain or "ai.onnx"): version
                  for domain, version in sorted(graph.opset_imports.items())},
        "ir_version": graph.model_info.ir_version,
        "producer": " ".join(filter(None, [graph.model_info.producer_name,
                                           graph.model_info.producer_version])),
        "warnings": list(graph.warnings),
    }
