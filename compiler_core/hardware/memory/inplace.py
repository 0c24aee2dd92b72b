"""In-place reuse: an op's output takes over the buffer of an input that dies at that op.

Legal when
- the op computes each output element from the input elements at the same position
  (element-wise ops, and fused nodes made only of them), or only relabels the input's bytes
  (Reshape, Squeeze, Flatten, Identity, inference-mode Dropout: a view);
- the input is an arena tensor that this op reads for the last time;
- input and output have the same size in bytes.
onnxruntime's planner does the same for kernels that declare they may run in place, and
TFLite shares the buffers of reshapes. A chain of such ops (Add -> Relu -> Reshape) runs in
one buffer.
"""

from __future__ import annotations

from ...ir import Node
from ..op_flops import METADATA_ONLY, is_elementwise
from .lifetimes import Lifetimes

# Metadata-only ops whose first output is their first input's bytes, relabelled.
VIEW_OPS = METADATA_ONLY - {"Shape", "Size", "Constant"}


def may_run_in_place(node: Node) -> bool:
    """True if the node's output may overwrite an input of the same size (module docstring)."""
    if node.body is not None:
        return all(may_run_in_place(inner) for inner in node.body.nodes)
    return node.domain in ("", "ai.onnx") and (is_elementwise(node.op_type)
                                                or node.op_type in VIEW_OPS)


def inplace_sources(lifetimes: Lifetimes) -> dict[str, str]:
    """output tensor -> the input tensor whose buffer it takes over."""
    arena = {tensor.name: tensor for tensor in lifetimes.tensors}
    sources: dict[str, str] = {}
    for step, node in enumerate(lifetimes.steps):
        if not may_run_in_place(node):
            continue
        taken: set[str] = set()
        outputs = node.outputs[:1] if node.op_type in VIEW_OPS else node.outputs
        for output in outputs:
            if output is None or output.name not in arena:
                continue
            wanted = arena[output.name].nbytes
            for value in node.inputs[:1] if node.op_type in VIEW_OPS else node.inputs:
                source = arena.get(value.name) if value is not None else None
                if (source is not None and source.last == step and source.nbytes == wanted
                        and source.name not in taken):
                    sources[output.name] = source.name
                    taken.add(source.name)
                    break
    return sources
