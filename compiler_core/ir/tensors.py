"""Checks and zero-copy conversion of ONNX TensorProtos into read-only numpy arrays.

Every declared tensor is validated *before* any data is materialised: its dims must be
non-negative, its data must match its declared shape, and it must not be so large that building
it would exhaust memory.  Errors name the tensor and say what to do.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from ..errors import ModelLoadError
from .dtypes import dtype_name, element_bits, to_numpy

# Where a tensor's elements live when they are not in raw_data, and how many entries each takes.
_TYPED_FIELDS = {
    TensorProto.FLOAT: ("float_data", 1), TensorProto.COMPLEX64: ("float_data", 2),
    TensorProto.DOUBLE: ("double_data", 1), TensorProto.COMPLEX128: ("double_data", 2),
    TensorProto.INT64: ("int64_data", 1), TensorProto.UINT32: ("uint64_data", 1),
    TensorProto.UINT64: ("uint64_data", 1), TensorProto.STRING: ("string_data", 1),
}
_ZERO_COPY_TYPES = {
    TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT8, TensorProto.UINT8,
    TensorProto.INT16, TensorProto.UINT16, TensorProto.INT32, TensorProto.UINT32,
    TensorProto.INT64, TensorProto.UINT64, TensorProto.BOOL, TensorProto.FLOAT16,
}


def memory_limit_bytes() -> int:
    """Largest single tensor GraphLab will materialise: half of this machine's physical memory."""
    override = os.environ.get("GRAPHLAB_MAX_TENSOR_BYTES")
    if override:
        return int(override)
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def declared_elements(tensor: TensorProto, what: str) -> int:
    dims = list(tensor.dims)
    if any(d < 0 for d in dims):
        raise ModelLoadError(f"{what} declares a negative dimension {dims}", where=tensor.name,
                             hint="tensor dimensions must be >= 0; re-export the model")
    count = 1
    for d in dims:
        count *= d
    return count


def declared_bytes(tensor: TensorProto, what: str) -> int:
    return (declared_elements(tensor, what) * element_bits(tensor.data_type) + 7) // 8


def check_tensor(tensor: TensorProto, what: str, limit: int, raw_bytes: int | None = None
                 ) -> None:
    """Raise ModelLoadError if the tensor's data does not match its declaration or is too big.
    ``raw_bytes``: the length of its raw data when that was kept out of the proto."""
    size = declared_bytes(tensor, what)
    if size > limit:
        raise ModelLoadError(
            f"{what} declares {_fmt_bytes(size)} (shape {list(tensor.dims)}), more than the "
            f"{_fmt_bytes(limit)} GraphLab allows for one tensor", where=tensor.name,
            hint="the file is corrupt or the model is too large for this machine")
    if tensor.data_location == TensorProto.EXTERNAL:
        return  # checked against the external file when it is read
    count = declared_elements(tensor, what)
    if raw_bytes is not None or tensor.HasField("raw_data"):
        found = len(tensor.raw_data) if raw_bytes is None else raw_bytes
        if tensor.data_type != TensorProto.STRING and found != size:
            raise ModelLoadError(
                f"{what} declares shape {list(tensor.dims)} {dtype_name(tensor.data_type)} "
                f"({size} bytes) but holds {found} bytes of data", where=tensor.name,
                hint="the file is truncated or corrupt; re-export the model")
        return
    field, per_element = _TYPED_FIELDS.get(tensor.data_type, ("int32_data", 1))
    found = len(getattr(tensor, field))
    if found != count * per_element and not (found == 0 and count == 0):
        raise ModelLoadError(
            f"{what} declares shape {list(tensor.dims)} ({count} elements) but holds {found} "
            f"values", where=tensor.name, hint="the file is corrupt; re-export the model")


def to_readonly_array(tensor: TensorProto) -> np.ndarray:
    """Read-only numpy array of the tensor's data (one copy out of the protobuf)."""
    if tensor.HasField("raw_data") and tensor.data_type in _ZERO_COPY_TYPES:
        array = np.frombuffer(tensor.raw_data, dtype=to_numpy(tensor.data_type))
        array = array.reshape(tuple(tensor.dims))
    else:
        array = numpy_helper.to_array(tensor)
    if array.flags.writeable:
        array.flags.writeable = False
    return array


def sparse_to_dense(sparse: onnx.SparseTensorProto) -> np.ndarray:
    """Dense copy of a sparse initializer (GraphLab's passes work on dense constants)."""
    values = numpy_helper.to_array(sparse.values)
    indices = numpy_helper.to_array(sparse.indices)
    dense = np.zeros(tuple(sparse.dims), dtype=values.dtype)
    if indices.ndim == 1:
        dense.reshape(-1)[indices] = values
    else:
        dense[tuple(indices.T)] = values
    dense.flags.writeable = False
    return dense


def _fmt_bytes(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if n < 1024:
            return f"{n:.0f} {unit}"
        n /= 1024
    return f"{n:.0f} EB"
