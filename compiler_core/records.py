"""Records to JSON at the edge: one serializer for every dataclass record GraphLab prints.

The CLI's ``--json``, the app's payloads and the report read records through ``to_json``
instead of a ``to_dict`` written by hand per class.  What it does with a value:

- a dataclass becomes a dict of its fields, in order, each as its field's metadata says
  (``record_field``: another key, left out, rounded, converted first, left out when None or
  empty), then the values its class declares in ``json_derived``: a name (a property, or a
  method called with no arguments), or ``(key, "dotted.path")`` read through other records
  (None as soon as a step is None), or ``(key, path, convert)``, ``convert`` applied to what
  the path reads (not to None); ``json_order``, when a class has one, lists keys in the
  order they are written (the others follow); a field's converted value or a derived value
  that is ``OMIT`` is left out (a key that only some records of a class carry);
- tuples and lists become lists (a NamedTuple a dict of its names), sets sorted lists,
  mappings dicts, enums their value, numpy scalars and arrays plain numbers and lists;
- a float that is not finite becomes None (JSON has no inf or nan).

An object that is not a record (an exception, a result holding graphs) gives one: its
``record()`` returns a dataclass that ``to_json`` writes.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Mapping
from typing import Any, Callable

import numpy as np

_SPEC = "record"   # the key of a field's metadata this module reads


@dataclasses.dataclass(frozen=True)
class FieldSpec:
    """How one field is written: under ``key`` (default: its name), or not at all (``omit``);
    ``convert`` applied first (not to None); floats rounded to ``digits``; left out when None
    (``omit_none``) or falsy (``omit_empty``)."""

    key: str | None = None
    omit: bool = False
    convert: Callable[[Any], Any] | None = None
    digits: int | None = None
    omit_none: bool = False
    omit_empty: bool = False


_PLAIN = FieldSpec()

OMIT = object()   # a converted or derived value that leaves its key out


def record_field(*, key: str | None = None, omit: bool = False,
                 convert: Callable[[Any], Any] | None = None, digits: int | None = None,
                 omit_none: bool = False, omit_empty: bool = False, **field_args):
    """A dataclass field (``dataclasses.field``'s arguments pass through) that says how
    ``to_json`` writes it."""
    spec = FieldSpec(key, omit, convert, digits, omit_none, omit_empty)
    return dataclasses.field(metadata={_SPEC: spec}, **field_args)


def names(refs) -> list[str] | None:
    """Nodes (or anything with a ``name``) by name: the form records show references in."""
    return None if refs is None else [ref.name for ref in refs]


def name_of(ref) -> str | None:
    """One reference by name (None stays None)."""
    return None if ref is None else ref.name


def text_or_none(text: str) -> str | None:
    """An empty text as null: JSON readers test a missing pass name or note for null."""
    return text or None


def to_json(value: Any, *, only: tuple[str, ...] | None = None) -> Any:
    """``value`` as JSON-ready data (see the module docstring); ``only``: of a dataclass
    record, just these keys, in this order."""
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if type(value) is dict:       # the commonest containers first: fewer checks each
        return {key: to_json(item) for key, item in value.items()}
    if type(value) is list:
        return [to_json(item) for item in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, enum.Enum):
        return to_json(value.value)
    if isinstance(value, np.generic):
        return to_json(value.item())
    if isinstance(value, np.ndarray):
        return to_json(value.tolist())
    if isinstance(value, Mapping):
        return {key: to_json(item) for key, item in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_asdict"):   # a NamedTuple: its names
        return to_json(value._asdict())
    if isinstance(value, (list, tuple)):
        return [to_json(item) for item in value]
    if isinstance(value, (set, frozenset)):
        return [to_json(item) for item in sorted(value)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _record(value, only)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _record(record, only: tuple[str, ...] | None) -> dict:
    data: dict[str, Any] = {}
    written, derived, class_order = _plan(type(record))
    for name, key, spec in written:
        if only is not None and key not in only:
            continue
        value = getattr(record, name)
        if spec is _PLAIN:
            data[key] = to_json(value)
            continue
        if spec.convert is not None and value is not None:
            value = spec.convert(value)
        if value is OMIT or (spec.omit_none and value is None) or (
                spec.omit_empty and not value):
            continue
        value = to_json(value)
        if spec.digits is not None and isinstance(value, float):
            value = round(value, spec.digits)
        data[key] = value
    for key, path, convert in derived:
        if only is None or key in only:
            value = _read(record, path)
            if convert is not None and value is not None:
                value = convert(value)
            if value is not OMIT:
                data[key] = to_json(value)
    order = only or class_order
    if not order:
        return data
    return {**{key: data[key] for key in order if key in data}, **data}


_PLANS: dict[type, tuple] = {}


def _plan(cls: type) -> tuple:
    """How a record class is written, worked out once per class: its written fields as
    (name, key, spec), its derived values as (key, path steps, convert or None), its
    json_order."""
    plan = _PLANS.get(cls)
    if plan is None:
        written = []
        for field in dataclasses.fields(cls):
            spec = field.metadata.get(_SPEC, _PLAIN)
            if not spec.omit:
                written.append((field.name, spec.key or field.name, spec))
        derived = []
        for entry in getattr(cls, "json_derived", ()):
            key, path, *convert = (entry, entry) if isinstance(entry, str) else entry
            derived.append((key, tuple(path.split(".")), convert[0] if convert else None))
        plan = _PLANS[cls] = (tuple(written), tuple(derived),
                              tuple(getattr(cls, "json_order", ())))
    return plan


def _read(record, path: tuple[str, ...]):
    """``record.a.b`` for path ("a", "b") (None once a step is None); a method is called."""
    value = record
    for step in path:
        if value is None:
            return None
        value = getattr(value, step)
        if callable(value):
            value = value()
    return value
