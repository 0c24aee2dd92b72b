"""Checks of a model against the ONNX op schemas, before it is built into the IR.

The structural checks (one producer per value, nothing undefined) live with the importer; these
look at what each node claims to be: an op type, and attributes of the types its schema gives.
A model that fails them is one onnxruntime refuses too, so it is refused here, naming the
node, instead of failing later in a pass or a numerical check.  What a runtime may still
accept (an opset newer than onnx knows, no ai.onnx opset at all) is a warning.
"""

from __future__ import annotations

import functools

import onnx

from ..errors import ModelLoadError
from .ort_schemas import ORT_DOMAINS, check_ort_node

DEFAULT_DOMAINS = ("", "ai.onnx")
# The ai.onnx opset a model that imports none is read (and written) with.
ASSUMED_OPSET = 18


def opset_versions(model: onnx.ModelProto) -> dict[str, int]:
    """{domain: version} ('' for ai.onnx); ai.onnx ops without an import read as ASSUMED_OPSET."""
    opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in model.opset_import}
    if "" not in opsets and any(n.domain in DEFAULT_DOMAINS for n in model.graph.node):
        opsets[""] = ASSUMED_OPSET
    return opsets


def check_schemas(model: onnx.ModelProto, opsets: dict[str, int]) -> list[str]:
    """Raise ModelLoadError for nodes no runtime can run; return warnings for the rest.

    ``opsets`` are the model's `opset_versions`."""
    warnings = []
    newest = onnx.defs.onnx_opset_version()
    if opsets.get("", 0) > newest:
        warnings.append(f"the model imports ai.onnx opset {opsets['']}, newer than the {newest} "
                        f"this onnx package knows: ops are checked against opset {newest}")
    if "" in opsets and not any(o.domain in DEFAULT_DOMAINS for o in model.opset_import):
        warnings.append(f"the model imports no ai.onnx opset: its ops are read as opset "
                        f"{ASSUMED_OPSET}")
    if not model.graph.output:
        raise ModelLoadError("the model has no graph outputs: it computes nothing",
                             where=model.graph.name or "graph",
                             hint="list the values it returns as graph outputs")
    for index, node in enumerate(model.graph.node):
        _check_node(node, index, opsets, newest)
    return warnings


def _check_node(node: onnx.NodeProto, index: int, opsets: dict[str, int], newest: int) -> None:
    label = f"node {node.name!r}" if node.name else f"node #{index}"
    if not node.op_type:
        raise ModelLoadError(f"{label} has no op type", where=node.name or str(index),
                             hint="the model was edited by hand or is damaged; re-export it")
    if node.domain in ORT_DOMAINS:
        check_ort_node(node, label)
        return
    if node.domain not in DEFAULT_DOMAINS or not node.attribute:
        return  # custom domains' schemas are their runtime's business
    types = _attribute_types(node.op_type, min(opsets[""], newest))
    for attr in node.attribute:
        expected = types.get(attr.name)
        if expected is not None and attr.type != expected and not attr.ref_attr_name:
            raise ModelLoadError(
                f"{label} ({node.op_type}): attribute {attr.name!r} is "
                f"{onnx.AttributeProto.AttributeType.Name(attr.type)}, opset {opsets['']} "
                f"defines it as {onnx.AttributeProto.AttributeType.Name(expected)}",
                where=node.name or node.op_type, hint="re-export the model")


@functools.lru_cache(maxsize=None)
def _attribute_types(op_type: str, opset: int) -> dict[str, int]:
    """The schema's attribute types of an ai.onnx op ({} for an op unknown to the opset)."""
    try:
        schema = onnx.defs.get_schema(op_type, opset, "")
    except onnx.defs.SchemaError:
        return {}  # loaded as an opaque node, with its own warning
    return {name: int(attr.type) for name, attr in schema.attributes.items()}
