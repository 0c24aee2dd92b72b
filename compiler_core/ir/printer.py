"""The IR as text, one line per node in execution order — the way torch.fx prints a graph.

    %relu_out : float32[1,16,8,8] = Relu(%conv_out)                  # /block1/Relu

It is the first thing a student reads, so it favours clarity: SSA names, the op and its key
attributes, the output types; constants are summarised, not dumped.
"""

from __future__ import annotations

import numpy as np
import onnx

from .dtypes import dtype_text, is_dtype_attribute
from .graph import Graph
from .node import Node

MAX_ATTR_CHARS = 60


def format_attr(value) -> str:
    if isinstance(value, np.ndarray):
        if value.size <= 4:
            return "tensor(" + np.array2string(value.reshape(-1), separator=",") + ")"
        return f"tensor<{value.dtype}{list(value.shape)}>"
    if isinstance(value, onnx.GraphProto):
        return f"<graph {value.name or ''} {len(value.node)} nodes>"
    if isinstance(value, tuple) and value and isinstance(value[0], onnx.GraphProto):
        return f"<{len(value)} graphs>"
    if isinstance(value, (onnx.TypeProto, onnx.SparseTensorProto)):
        return f"<{type(value).__name__}>"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple):
        text = "[" + ",".join(format_attr(v) for v in value) + "]"
    else:
        text = repr(value) if isinstance(value, (str, bytes)) else str(value)
    return text if len(text) <= MAX_ATTR_CHARS else text[:MAX_ATTR_CHARS - 3] + "..."


def _attr_text(node: Node, name: str, value) -> str:
    """An attribute as `show` prints it: an element type by name (Cast's to=float16)."""
    return dtype_text(value) if is_dtype_attribute(node.op_type, name) else format_attr(value)


def format_node(node: Node) -> str:
    outs = [o for o in node.outputs if o is not None]
    lhs = ", ".join(f"%{o.name} : {o.describe_type()}" for o in outs) or "()"
    attrs = ", ".join(f"{k}={_attr_text(node, k, v)}" for k, v in sorted(node.attrs.items()))
    args = ", ".join(f"%{v.name}" if v is not None else "_" for v in node.inputs)
    op = node.qualified_op + (f"[{attrs}]" if attrs else "")
    extra = f"  # {node.name}"
    if node.body is not None:
        extra += f"  (fused: {len(node.body)} ops)"
    return f"  {lhs} = {op}({args}){extra}"


def format_graph(graph: Graph) -> str:
    """The whole graph as text."""
    params = sum(int(v.stored.size) for v in graph.initializers.values())
    signature = ", ".join(f"%{v.name} : {v.describe_type()}" for v in graph.inputs)
    opsets = ", ".join(f"{d or 'ai.onnx'}={v}" for d, v in sorted(graph.opset_imports.items()))
    lines = [f"graph {graph.name}({signature}) {{",
             f"  # opsets: {opsets}; {len(graph)} nodes; {len(graph.initializers)} "
             f"initializers ({params:,} parameters)"]
    lines += [format_node(n) for n in graph.nodes]
    lines.append("  return " + ", ".join(f"%{v.name}" for v in graph.outputs))
    lines.append("}")
    return "\n".join(lines)
