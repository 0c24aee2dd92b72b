"""A standalone script that reproduces a reduced failure, for an upstream bug report.

The script builds the model with ``onnx.helper`` (one line per node, so a reader sees the graph),
feeds it the data the reducer found, and shows the failure with onnxruntime alone: the session
at the level that crashes or refuses it, or both levels' outputs side by side for a mismatch.
A failure of GraphLab's own passes is shown with GraphLab's pipeline instead.  Small tensors are
written as lists, larger ones as base64 of their bytes; a graph onnx.helper cannot write
plainly (subgraphs, model-local functions) is embedded whole.
"""

from __future__ import annotations

import base64

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..ir.proto_types import read_dim
from ..runtime_check import LEVELS
from .failures import Failure

INLINE_ELEMENTS = 16


def reproduction_script(model: onnx.ModelProto, feed: dict[str, np.ndarray],
                        failure: Failure) -> str:
    """The script's text (see the module docstring)."""
    lines = ['"""Reproduction: the model below ' + failure.describe().replace('"""', "'''")
             + '.\n\nMade by graphlab reduce; needs only onnx, numpy and onnxruntime."""',
             "import base64", "", "import numpy as np", "import onnx",
             "from onnx import TensorProto, helper, numpy_helper", "", "",
             "def array(data, dtype, shape):",
             "    if isinstance(data, str):",
             "        return np.frombuffer(base64.b64decode(data), dtype).reshape(shape).copy()",
             "    return np.array(data, dtype).reshape(shape)", ""]
    lines += _model_lines(model)
    lines += ["", "feed = {"]
    lines += [f"    {name!r}: {_array(data)}," for name, data in feed.items()]
    lines += ["}", ""]
    lines += _failure_lines(failure)
    return "\n".join(lines) + "\n"


def _model_lines(model: onnx.ModelProto) -> list[str]:
    plain = not model.functions and all(
        a.type not in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
        for n in model.graph.node for a in n.attribute)
    if not plain:
        text = base64.b64encode(model.SerializeToString()).decode()
        return ["# the model has subgraphs or functions: embedded whole",
                f"model = onnx.load_from_string(base64.b64decode({text!r}))"]
    g = model.graph
    lines = ["nodes = ["]
    for node in g.node:
        args = [repr(node.op_type), repr(list(node.input)), repr(list(node.output))]
        if node.name:
            args.append(f"name={node.name!r}")
        if node.domain:
            args.append(f"domain={node.domain!r}")
        args += [f"{a.name}={_attribute(a)}" for a in node.attribute]
        lines.append(f"    helper.make_node({', '.join(args)}),")
    lines.append("]")
    lines.append("initializers = [")
    for tensor in g.initializer:
        lines.append(f"    numpy_helper.from_array({_array(numpy_helper.to_array(tensor))}, "
                     f"{tensor.name!r}),")
    lines.append("]")
    lines.append(f"inputs = [{', '.join(_value_info(v) for v in g.input)}]")
    lines.append(f"outputs = [{', '.join(_value_info(v) for v in g.output)}]")
    opsets = ", ".join(f"helper.make_opsetid({o.domain!r}, {o.version})"
                       for o in model.opset_import)
    lines += [f"graph = helper.make_graph(nodes, {g.name!r}, inputs, outputs, initializers)",
              f"model = helper.make_model(graph, opset_imports=[{opsets}])",
              f"model.ir_version = {model.ir_version}"]
    return lines


def _attribute(attr: onnx.AttributeProto) -> str:
    value = helper.get_attribute_value(attr)
    if isinstance(value, onnx.TensorProto):
        return f"numpy_helper.from_array({_array(numpy_helper.to_array(value))})"
    if isinstance(value, bytes):
        return repr(value.decode("utf-8", "replace"))
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return repr([v.decode("utf-8", "replace") for v in value])
    return repr(value)


def _array(data: np.ndarray) -> str:
    data = np.asarray(data)
    dtype = f"np.{data.dtype.name}" if data.dtype != np.bool_ else "np.bool_"
    if data.size <= INLINE_ELEMENTS:
        return f"array({data.reshape(-1).tolist()!r}, {dtype}, {list(data.shape)})"
    raw = base64.b64encode(np.ascontiguousarray(data).tobytes()).decode()
    return f"array({raw!r}, {dtype}, {list(data.shape)})"


def _value_info(value: onnx.ValueInfoProto) -> str:
    tensor = value.type.tensor_type
    if not value.type.HasField("tensor_type"):
        return f"onnx.ValueInfoProto(name={value.name!r})"
    shape = [read_dim(d) for d in tensor.shape.dim] if tensor.HasField("shape") else None
    kind = onnx.TensorProto.DataType.Name(tensor.elem_type)
    return f"helper.make_tensor_value_info({value.name!r}, TensorProto.{kind}, {shape!r})"


def _failure_lines(failure: Failure) -> list[str]:
    if failure.kind in ("pass-error",) or getattr(failure, "pipeline", None):
        return ["# shown with GraphLab's pipeline (the fault is in its passes)",
                "from compiler_core.ir import load_model",
                "from compiler_core.compilation import compile_model",
                "from compiler_core.verify import run",
                "graph = load_model(model.SerializeToString())",
                f"final = compile_model(graph, {failure.pipeline!r}).final",
                "before, after = run(graph, feed), run(final, feed)",
                "for name in before:",
                "    print(name, 'max abs difference', np.abs(before[name] - after[name]).max())"]
    lines = ["import onnxruntime as ort", "",
             "def session(level):",
             "    options = ort.SessionOptions()",
             "    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)",
             "    return ort.InferenceSession(model.SerializeToString(), options,",
             "                                providers=['CPUExecutionProvider'])", ""]
    level = LEVELS[failure.level]
    if failure.kind == "mismatch":
        return lines + [
            "off = session('ORT_DISABLE_ALL').run(None, feed)",
            f"on = session({level!r}).run(None, feed)",
            "for output, a, b in zip(model.graph.output, off, on):",
            "    print(output.name, 'max abs difference', np.abs(a.astype(float) - b).max(),",
            "          'scale', np.abs(a).max())"]
    return lines + ["print('with the optimizer off:', [o.shape for o in "
                    "session('ORT_DISABLE_ALL').run(None, feed)])",
                    f"print('at {level}:')",
                    f"print(session({level!r}).run(None, feed))"
                    + ("  # crashes the process" if failure.kind == "crash" else "")]
