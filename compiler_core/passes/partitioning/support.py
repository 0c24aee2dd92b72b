"""Can an op run on the accelerator?  The checks a partitioner makes, each with its reason.

An op runs on the chip only if the chip has a kernel for it (the target file's
`supported_ops`), computes its tensors' element type (the dtypes it lists a peak rate for), and
knows every tensor's size at compile time (accelerator kernels and buffers are fixed when the
program is built).  A fused node runs there when everything in its body does.  Constants are
compile-time data the compiler converts as it likes, so only run-time tensors are checked.
"""

from __future__ import annotations

from ...hardware.targets import Target
from ...ir import Node, Value
from ...ir.dtypes import dtype_name
from ...ir.shape_inference import is_unnamed_dim


def computed_dtypes(target: Target) -> frozenset[str]:
    """Element types the target computes: those it lists a peak for (uint8 beside int8)."""
    dtypes = set(target.peak_ops_per_s)
    if "int8" in dtypes:
        dtypes.add("uint8")
    return frozenset(dtypes)


def unsupported_reason(node: Node, target: Target) -> str | None:
    """Why ``node`` must stay on the host CPU, or None if the target can run it."""
    if node.body is None:
        reason = _op_reason(node, target)
    else:
        missing = sorted(unsupported_ops(node, target))
        reason = (f"its body holds {', '.join(missing)}, not supported on {target.name}"
                  if missing else None)
    return reason if reason is not None else tensor_reason(node, target)


def unsupported_ops(node: Node, target: Target) -> set[str]:
    """The ops in ``node`` (inside its body, at any depth) the target has no kernel for."""
    if node.body is not None:
        return set().union(*(unsupported_ops(inner, target) for inner in node.body.nodes))
    return {node.qualified_op} if _op_reason(node, target) is not None else set()


def _op_reason(node: Node, target: Target) -> str | None:
    if node.domain not in ("", "ai.onnx"):
        return f"{node.qualified_op} is not an ONNX op {target.name} has a kernel for"
    if target.supported_ops is not None and node.op_type not in target.supported_ops:
        return f"{node.op_type} not supported on {target.name}"
    return None


def tensor_reason(node: Node, target: Target) -> str | None:
    """Why the node's run-time tensors cannot live on the target (dtype, size), or None."""
    dtypes = computed_dtypes(target)
    for value in list(node.inputs) + list(node.outputs):
        if value is None or value.is_constant:
            continue
        name = dtype_name(value.elem_type)
        if name not in dtypes:
            return (f"{name} tensor {value.name}: {target.name} computes "
                    f"{', '.join(sorted(dtypes))}")
        if value.static_shape() is None:
            return (f"dynamic shape: {value.name} is {value.describe_type()}, and accelerator "
                    f"kernels are built for fixed sizes ({_binding_hint(value)})")
    return None


def _binding_hint(value: Value) -> str:
    names = [d for d in value.shape or () if isinstance(d, str) and not is_unnamed_dim(d)]
    if not names:
        return "bind the model's input dims"
    return "bind " + ",".join(f"{name}=..." for name in dict.fromkeys(names))
