"""Short texts for explanations: what a value, constant or attribute looks like to a reader.

Texts name op types rather than node names wherever they end up in a failure's reason, so that
reasons group across a model ("found Where" twelve times reads as one cause, not twelve).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import Value
from ..ir.dtypes import dtype_name
from ..ir.lazy_tensors import LazyTensor, values_of

SMALL_ARRAY = 4  # arrays up to this many elements are shown in full


def format_number(number: Any) -> str:
    if isinstance(number, (bool, np.bool_)):
        return str(bool(number))
    if isinstance(number, (int, np.integer)):
        return str(int(number))
    return f"{float(number):.6g}"


def format_array(array: "np.ndarray | LazyTensor") -> str:
    """'1.5', '[0, 2, 1]' or 'float32[768]' depending on size (a large weight still in its
    file is not read)."""
    if array.size <= SMALL_ARRAY:
        array = values_of(array)
    if array.size == 1:
        return format_number(array.reshape(-1)[0])
    if array.size <= SMALL_ARRAY:
        return "[" + ", ".join(format_number(x) for x in array.reshape(-1)) + "]"
    return f"{array.dtype}[{','.join(str(d) for d in array.shape)}]"


def format_attr(value: Any) -> str:
    if value is None:
        return "absent"
    if isinstance(value, np.ndarray):
        return format_array(value)
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(format_attr(v) for v in value) + "]"
    if isinstance(value, (int, float, np.number)):
        return format_number(value)
    if isinstance(value, (str, bytes)):
        return repr(value)
    return type(value).__name__


def format_shape(shape: tuple | None) -> str:
    if shape is None:
        return "unknown shape"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def describe_value(value: Value | None) -> str:
    """What sits at an input position: 'Where', 'constant 1.5', "graph input 'x'", 'no input'."""
    if value is None:
        return "no input"
    constant = value.constant_data()
    if constant is not None:
        return f"constant {format_array(constant)}"
    producer = value.producer
    if producer is not None:
        suffix = f" output {value.output_index}" if value.output_index > 0 else ""
        return producer.qualified_op + suffix
    if value.is_graph_input:
        return f"graph input '{value.name}'"
    return f"value '{value.name}'"


def describe_type(value: Value) -> str:
    return f"{dtype_name(value.elem_type)}{format_shape(value.shape)}"
