"""ONNX element types: names, numpy equivalents and byte sizes.

The IR stores a tensor's element type as the ONNX enum (``onnx.TensorProto.FLOAT`` == 1) because
that is what round-trips exactly; these helpers translate for printing, numpy and cost models.
"""

from __future__ import annotations

import functools

import numpy as np
import onnx
from onnx import TensorProto

_NAMES = {v: k.lower() for k, v in TensorProto.DataType.items()}

# Bits per element for types numpy has no native dtype for (packed or 8-bit floats).
_SUB_BYTE_BITS = {
    "int4": 4, "uint4": 4, "float4e2m1": 4, "int2": 2, "uint2": 2,
}


def dtype_name(elem_type: int | None) -> str:
    """'float32'-style name of an ONNX element type (``'?'`` when unknown)."""
    if elem_type is None or elem_type == TensorProto.UNDEFINED:
        return "?"
    name = _NAMES.get(elem_type, f"type{elem_type}")
    return {"float": "float32", "double": "float64"}.get(name, name)


@functools.lru_cache(maxsize=None)
def to_numpy(elem_type: int) -> np.dtype:
    """numpy dtype used to hold tensors of this ONNX type (ml_dtypes types where needed); one
    object per type, asked for by every weight's dtype, size and fingerprint."""
    return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))


def from_numpy(dtype: np.dtype) -> int:
    """ONNX element type of a numpy dtype."""
    return onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype).newbyteorder("="))


def raw_bytes(array: np.ndarray) -> memoryview:
    """An array's bytes as ONNX's raw_data holds them: C order, little-endian, one byte per
    item of the buffer.  A view when the array already is laid out so; otherwise one copy.
    (A transposed or sliced array, a big-endian one, or an ml_dtypes one such as bfloat16,
    which Python's buffer protocol cannot cast, are all handled here.)"""
    array = np.asarray(array)
    if array.dtype.byteorder != "|":
        array = np.asarray(array, dtype=array.dtype.newbyteorder("<"))
    return memoryview(np.ascontiguousarray(array).reshape(-1).view(np.uint8))


def element_bits(elem_type: int | None) -> int:
    """Bits one element occupies in memory; 32 when the type is unknown (a safe default)."""
    if elem_type is None or elem_type == TensorProto.UNDEFINED:
        return 32
    name = _NAMES.get(elem_type, "")
    if name in _SUB_BYTE_BITS:
        return _SUB_BYTE_BITS[name]
    if elem_type == TensorProto.STRING:
        return 64  # a pointer-sized handle; strings are rare and never on a hot path
    return to_numpy(elem_type).itemsize * 8


def is_float(elem_type: int | None) -> bool:
    return elem_type in (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16,
                         TensorProto.BFLOAT16)


# Attributes whose value is an ONNX element type (the TensorProto enum), by op: shown by
# name in every message ("to = float32", not "to = 1").
_DTYPE_ATTRIBUTES = {
    "Cast": ("to",), "EyeLike": ("dtype",), "RandomNormal": ("dtype",),
    "RandomNormalLike": ("dtype",), "RandomUniform": ("dtype",),
    "RandomUniformLike": ("dtype",), "Multinomial": ("dtype",), "Bernoulli": ("dtype",),
    "QuantizeLinear": ("output_dtype",),
}


def is_dtype_attribute(op_types, name: str) -> bool:
    """Whether attribute ``name`` of ``op_types`` (one op type or several) names a dtype."""
    if isinstance(op_types, str):
        op_types = (op_types,)
    return any(name in _DTYPE_ATTRIBUTES.get(op, ()) for op in op_types)


def dtype_text(value) -> str:
    """An element-type attribute's value by name ('float16'); anything else as it is."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and \
            int(value) in _NAMES and int(value) != TensorProto.UNDEFINED:
        return dtype_name(int(value))
    return str(value)
