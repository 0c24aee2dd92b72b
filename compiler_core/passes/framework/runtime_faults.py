"""Rewrites that would expose a known fault of onnxruntime's own optimizer.

A cleanup that is exact can still leave a graph onnxruntime refuses at its default level,
when the node it removes was all that kept one of onnxruntime's fusions from a site that
fusion gets wrong.  Such a removal is declined, and the decline says why; a fault already
present in the input model is left to onnxruntime (the runtime check names it as inherited).
"""

from __future__ import annotations

from ...ir import Node, Value

ONNX_DOMAINS = ("", "ai.onnx")
# Ops onnxruntime keeps in front of a LayerNorm written out until its LayerNormFusion has run
# (onnxruntime 1.32, each alone between a Cast and the norm: the model loads).  It removes an
# Identity, Dropout, Add of 0, Expand to the same shape or Cast round trip there first, and
# then fails on the input model as on ours: keeping those would protect nothing.
KEPT_BY_ONNXRUNTIME = frozenset({"Transpose", "Reshape", "Squeeze", "Unsqueeze", "Slice"})


def exposed_fault(removed: Node, replacement: Value) -> str | None:
    """Why the readers of ``removed`` (a node about to be bypassed) must not read
    ``replacement`` directly, or None.

    onnxruntime's LayerNormFusion (basic level and above) takes a Cast feeding a decomposed
    LayerNorm (ReduceMean and Sub reading the same tensor, nothing else) into the
    LayerNormalization it builds, which then reads the Cast's input type beside a scale of
    the Cast's output type, and the model fails to load ("Type parameter (T) ... bound to
    different types")."""
    if removed.op_type not in KEPT_BY_ONNXRUNTIME or removed.domain not in ONNX_DOMAINS:
        return None
    output = removed.outputs[0]
    cast = replacement.producer
    if cast is None or cast.op_type != "Cast" or cast.domain not in ONNX_DOMAINS:
        return None
    readers = [user for user, _ in output.uses]
    means = [r for r in readers if r.op_type == "ReduceMean" and r.domain in ONNX_DOMAINS]
    if len(means) != 1 or any(r.op_type not in ("ReduceMean", "Sub") for r in readers):
        return None
    mean = means[0].outputs[0]
    if not any(r.op_type == "Sub" and mean in r.inputs for r in readers):
        return None
    return (f"{output.name!r} is read by a LayerNorm written out (ReduceMean, Sub); read "
            f"straight from the Cast {cast.name!r}, onnxruntime's LayerNormFusion would take "
            f"the Cast into the LayerNormalization it builds, with mismatched types, and the "
            f"model would fail to load at onnxruntime's default level (its fault)")
