"""Element types as the hardware models name them, and how many bytes one element occupies.

Targets list peak rates per dtype and the simulator counts bytes moved, so both need one
spelling per type: the canonical names are numpy's / the IR's ('float32', 'bfloat16', 'int8').
"""

from __future__ import annotations

ELEMENT_BYTES: dict[str, float] = {
    "float64": 8, "float32": 4, "tfloat32": 4, "float16": 2, "bfloat16": 2,
    "float8e4m3": 1, "float8e5m2": 1, "int32": 4, "int16": 2, "uint16": 2,
    "int8": 1, "uint8": 1, "int4": 0.5, "uint4": 0.5,
}

_ALIASES = {
    "float": "float32", "fp32": "float32", "f32": "float32", "double": "float64",
    "fp64": "float64", "half": "float16", "fp16": "float16", "f16": "float16",
    "bf16": "bfloat16", "tf32": "tfloat32", "fp8": "float8e4m3", "float8": "float8e4m3",
    "i8": "int8", "u8": "uint8",
}


def canonical_dtype(name: str) -> str:
    """The canonical spelling of a dtype name; raises ValueError naming the known ones."""
    key = str(name).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in ELEMENT_BYTES:
        known = ", ".join(sorted(ELEMENT_BYTES))
        raise ValueError(f"unknown dtype {name!r}; known dtypes: {known}")
    return key


def element_bytes(dtype: str) -> float:
    """Bytes one element of `dtype` occupies (0.5 for 4-bit types)."""
    return ELEMENT_BYTES[canonical_dtype(dtype)]
