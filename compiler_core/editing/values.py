"""An edit's JSON values made into ONNX attributes and tensors of the type the model needs.

The type is the model's, never the edit's: an attribute keeps the type it has (or the one its
op's schema gives), a tensor keeps its element type, and a value that does not fit (a fraction
for an int, 300 for an int8, text for a float) is refused with what was expected.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import AttributeProto as A
from onnx import helper, numpy_helper

from ..errors import EditError
from .records import thawed

_ATTRIBUTE_KINDS = {A.INT: "an integer", A.FLOAT: "a number", A.STRING: "a text",
                    A.INTS: "a list of integers", A.FLOATS: "a list of numbers",
                    A.STRINGS: "a list of texts", A.TENSOR: "a tensor (a number or a list)"}


def op_schema(op_type: str, domain: str, opset: int | None):
    """The op's schema at the model's opset, or None (a custom domain, an unknown op)."""
    if opset is None:
        return None
    try:
        return onnx.defs.get_schema(op_type, max_inclusive_version=opset, domain=domain)
    except onnx.defs.SchemaError:
        return None


def attribute_type(node: onnx.NodeProto, name: str, schema, label: str) -> int:
    """The AttributeProto type ``name`` has on ``node`` (its own, else its schema's)."""
    for attr in node.attribute:
        if attr.name == name:
            return attr.type
    if schema is not None and name in schema.attributes:
        return int(schema.attributes[name].type.value)
    known = sorted({a.name for a in node.attribute} | set(schema.attributes if schema else ()))
    raise EditError(f"{label}: {node.op_type} has no attribute {name!r}", where=node.name,
                    hint=f"its attributes: {', '.join(known)}" if known else
                    f"{node.op_type} takes no attributes")


def make_attribute(name: str, kind: int, value: Any, label: str,
                   old: onnx.AttributeProto | None = None) -> onnx.AttributeProto:
    """The attribute ``name`` of type ``kind`` holding ``value`` (a TENSOR attribute keeps the
    old tensor's element type and, for one number, its shape)."""
    what = f"{label}: attribute {name!r}"
    value = thawed(value)
    if kind == A.INT:
        return helper.make_attribute(name, _integer(value, what))
    if kind == A.FLOAT:
        return helper.make_attribute(name, _number(value, what))
    if kind == A.STRING:
        return helper.make_attribute(name, _text(value, what))
    if kind in (A.INTS, A.FLOATS, A.STRINGS):
        items = value if isinstance(value, list) else [value]
        if any(isinstance(v, list) for v in items):
            raise EditError(f"{what} is {_ATTRIBUTE_KINDS[kind]}, not a nested list")
        read = {A.INTS: _integer, A.FLOATS: _number, A.STRINGS: _text}[kind]
        return helper.make_attribute(name, [read(v, what) for v in items],
                                     attr_type=kind)
    if kind == A.TENSOR:
        if old is not None and old.type == A.TENSOR:
            current = numpy_helper.to_array(old.t)
            tensor = make_tensor(old.t.name, old.t.data_type, current.shape, value, None, what)
        else:
            data = np.asarray(value)
            if data.dtype.kind not in "iufb":
                raise EditError(f"{what} must hold numbers")
            tensor = numpy_helper.from_array(data.astype(np.float32 if data.dtype.kind == "f"
                                                         else np.int64))
        return helper.make_attribute(name, tensor)
    raise EditError(f"{what} is of a kind edits cannot set (a graph, a sparse tensor or a "
                    f"type)", hint="edit the nodes around it instead")


def make_tensor(name: str, data_type: int, shape: tuple[int, ...], value: Any,
                new_shape: tuple[int, ...] | None, what: str) -> onnx.TensorProto:
    """A tensor of element type ``data_type`` holding ``value``: one number fills the shape,
    a list (flat or nested) gives every element.  The shape is ``new_shape`` when given."""
    shape = tuple(new_shape) if new_shape is not None else tuple(shape)
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    value = thawed(value)
    if isinstance(value, list):
        flat = _flatten(value, what)
        if len(flat) != count:
            raise EditError(f"{what}: {len(flat)} values given for shape {list(shape)}, which "
                            f"holds {count}",
                            hint="give one number to fill it, or add \"shape\" to change it")
    else:
        flat = [value] * count
    np_type = helper.tensor_dtype_to_np_dtype(data_type)
    type_name = helper.tensor_dtype_to_string(data_type).replace("TensorProto.", "").lower()
    if data_type == onnx.TensorProto.STRING:
        items = [_text(v, what).encode("utf-8") for v in flat]
        return helper.make_tensor(name, data_type, shape, items)
    if data_type == onnx.TensorProto.BOOL:
        items = [_boolean(v, what) for v in flat]
    elif np.dtype(np_type).kind in "iu":
        info = np.iinfo(np_type)
        items = [_integer(v, what) for v in flat]
        bad = next((v for v in items if not info.min <= v <= info.max), None)
        if bad is not None:
            raise EditError(f"{what}: {bad} does not fit in {type_name} "
                            f"({info.min}..{info.max})")
    else:
        items = [_number(v, what) for v in flat]
    array = np.asarray(items, dtype=np_type).reshape(shape)
    tensor = numpy_helper.from_array(array, name)
    tensor.data_type = data_type
    return tensor


def _flatten(value: list, what: str) -> list:
    """A flat list of a (possibly nested) list's leaves; a ragged nesting is refused."""
    array = np.asarray(value, dtype=object)
    if array.dtype == object and any(isinstance(v, list) for v in array.reshape(-1)):
        raise EditError(f"{what}: the nested lists have different lengths")
    return list(array.reshape(-1))


def _integer(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            isinstance(value, float) and not value.is_integer()):
        raise EditError(f"{what} must be an integer, not {value!r}")
    return int(value)


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise EditError(f"{what} must be a number, not {value!r}")
    return float(value)


def _boolean(value: Any, what: str) -> bool:
    if isinstance(value, bool) or value in (0, 1):
        return bool(value)
    raise EditError(f"{what} must be true or false (or 0 or 1), not {value!r}")


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise EditError(f"{what} must be a text, not {value!r}")
    return value
