"""ONNX attribute defaults, so ``op("Conv", group=1)`` also matches a Conv that omits ``group``."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import onnx


@lru_cache(maxsize=None)
def attribute_default(op_type: str, domain: str, name: str) -> Any:
    """The schema's default for an attribute (lists as tuples), or None when there is none."""
    try:
        schema = onnx.defs.get_schema(op_type, domain=domain)
    except onnx.defs.SchemaError:
        return None
    attribute = schema.attributes.get(name)
    if attribute is None or not attribute.default_value.type:
        return None
    value = onnx.helper.get_attribute_value(attribute.default_value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return tuple(value) if isinstance(value, list) else value
