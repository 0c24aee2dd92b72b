"""Edits as data: one frozen record per kind, read from and written to JSON.

An edit names nodes and values as the ONNX file does (a node without a name is called
``{op_type}_{index}``, as the importer calls it), so an edit list can be saved, shared in a
link and applied again to the same file.  Reading is strict: an unknown kind or field, a
missing field or a value of the wrong JSON type is refused with the edit's place in the list,
and the limits below keep an edit list small enough for a shared server to take from anyone.
"""

from __future__ import annotations

import json
import math
from dataclasses import MISSING, dataclass, fields
from typing import Any, ClassVar

from ..errors import EditError
from ..records import record_field, to_json

MAX_EDITS = 200               # edits in one list
MAX_TENSOR_VALUES = 65536     # numbers given in one edit (a set_tensor value, an inserted constant)
MAX_NAME_CHARS = 512          # a node, value or attribute name
MAX_EDITS_JSON_BYTES = 2 << 20   # an edit file or the edits a browser sends


def _names(values: tuple[str, ...]) -> list[str]:
    return list(values)


class _Edit:
    """What every kind shares: its JSON starts with ``"edit": kind``."""

    kind: ClassVar[str]
    json_derived = (("edit", "kind"),)
    json_order: ClassVar[tuple[str, ...]] = ("edit",)


@dataclass(frozen=True)
class SetAttribute(_Edit):
    """Give node ``node`` attribute ``name`` the value ``value`` (null removes it, so the
    op's default applies)."""

    node: str
    name: str
    value: Any

    kind: ClassVar[str] = "set_attribute"

    def describe(self) -> str:
        if self.value is None:
            return f"remove attribute {self.name} of {self.node}"
        return f"set {self.node}.{self.name} = {_short(self.value)}"


@dataclass(frozen=True)
class SetTensor(_Edit):
    """Give the constant ``name`` (an initializer or a Constant node's output) the value
    ``value``: one number fills it, a list (flat or nested) gives every element.  Its shape
    is kept unless ``shape`` is given; its element type is always kept."""

    name: str
    value: Any
    shape: tuple[int, ...] | None = record_field(default=None, omit_none=True,
                                                 convert=list)

    kind: ClassVar[str] = "set_tensor"

    def describe(self) -> str:
        shape = f" (shape {list(self.shape)})" if self.shape is not None else ""
        return f"set tensor {self.name}{shape} = {_short(self.value)}"


@dataclass(frozen=True)
class Bypass(_Edit):
    """Remove node ``node``: what read its first output reads its first input instead."""

    node: str

    kind: ClassVar[str] = "bypass"

    def describe(self) -> str:
        return f"bypass {self.node}"


@dataclass(frozen=True)
class Rewire(_Edit):
    """Make input ``input`` (its position, from 0) of node ``node`` read value ``value``
    ('' leaves an optional input out)."""

    node: str
    input: int
    value: str

    kind: ClassVar[str] = "rewire"

    def describe(self) -> str:
        return f"rewire {self.node} input {self.input} to {self.value or 'nothing'}"


@dataclass(frozen=True)
class Delete(_Edit):
    """Remove node ``node``, whose outputs nothing reads but the graph's outputs (which go
    with it), and the nodes and constants that fed only it."""

    node: str

    kind: ClassVar[str] = "delete"

    def describe(self) -> str:
        return f"delete {self.node}"


@dataclass(frozen=True)
class Insert(_Edit):
    """Put one new ``op`` node on the edge out of value ``on``: it reads ``on`` (then
    ``inputs``: value names, or numbers that become new constants of ``on``'s element type)
    and the ``consumers`` named (default: every node that reads ``on``) read its output.
    The graph's outputs keep reading ``on``."""

    op: str
    on: str
    inputs: tuple[Any, ...] = record_field(default=(), omit_empty=True, convert=list)
    attributes: tuple[tuple[str, Any], ...] = record_field(default=(), omit_empty=True,
                                                           convert=dict)
    consumers: tuple[str, ...] | None = record_field(default=None, omit_none=True,
                                                     convert=_names)
    name: str | None = record_field(default=None, omit_none=True)
    domain: str = record_field(default="", omit_empty=True)

    kind: ClassVar[str] = "insert"

    def describe(self) -> str:
        where = f" before {', '.join(self.consumers)}" if self.consumers else ""
        return f"insert {self.op} on {self.on}{where}"


@dataclass(frozen=True)
class Rename(_Edit):
    """Call node ``node`` (or value ``value``: exactly one of the two) ``to``."""

    to: str
    node: str | None = record_field(default=None, omit_none=True)
    value: str | None = record_field(default=None, omit_none=True)

    kind: ClassVar[str] = "rename"
    json_order = ("edit", "node", "value", "to")

    def describe(self) -> str:
        what = f"node {self.node}" if self.node is not None else f"value {self.value}"
        return f"rename {what} to {self.to}"


Edit = SetAttribute | SetTensor | Bypass | Rewire | Delete | Insert | Rename
KINDS: dict[str, type] = {cls.kind: cls for cls in
                          (SetAttribute, SetTensor, Bypass, Rewire, Delete, Insert, Rename)}


def edit_label(index: int, edit: Edit | dict | None) -> str:
    """'edit 3 (bypass)': how every message names an edit (counted from 1, as people do)."""
    kind = edit.kind if hasattr(edit, "kind") else (
        edit.get("edit") if isinstance(edit, dict) else None)
    return f"edit {index + 1}" + (f" ({kind})" if kind in KINDS else "")


def edits_to_json(edits) -> list[dict]:
    """The edit list as JSON data (what a file, a link and the app's store hold)."""
    return [to_json(edit) for edit in edits]


def read_edits_text(text: str | bytes, where: str = "the edits") -> list[Edit]:
    """Edits from JSON text (a file's or a browser's), with the size limit checked first."""
    if len(text) > MAX_EDITS_JSON_BYTES:
        raise EditError(f"{where} take {len(text)} bytes, more than the "
                        f"{MAX_EDITS_JSON_BYTES} allowed", where=where,
                        hint="split the edits, or set a large tensor from a file instead")
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise EditError(f"{where} are not JSON: {err}", where=where,
                        hint='write a list of edits, e.g. [{"edit": "bypass", "node": "relu"}]'
                        ) from None
    return edits_from_json(data, where)


def edits_from_json(data: Any, where: str = "the edits") -> list[Edit]:
    """Edit records from JSON data: a list of objects, each with an ``edit`` kind."""
    if not isinstance(data, list):
        raise EditError(f"{where} must be a JSON list of edits, not {_json_type(data)}",
                        where=where,
                        hint='write e.g. [{"edit": "bypass", "node": "relu"}]')
    if len(data) > MAX_EDITS:
        raise EditError(f"{where} hold {len(data)} edits, more than the {MAX_EDITS} allowed",
                        where=where)
    return [edit_from_json(item, index) for index, item in enumerate(data)]


def edit_from_json(item: Any, index: int = 0) -> Edit:
    """One edit record, or an EditError naming it and what is wrong with it."""
    if isinstance(item, tuple(KINDS.values())):
        return item
    label = edit_label(index, item)
    if not isinstance(item, dict):
        raise EditError(f"{label}: an edit is a JSON object, not {_json_type(item)}")
    kind = item.get("edit")
    if kind not in KINDS:
        raise EditError(f"{label}: unknown kind {kind!r}" if kind is not None else
                        f"{label}: no 'edit' field naming its kind",
                        hint=f"kinds: {', '.join(KINDS)}")
    cls = KINDS[kind]
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(item) - set(known) - {"edit"})
    if unknown:
        raise EditError(f"{label}: unknown field {', '.join(map(repr, unknown))}",
                        hint=f"{kind} takes {_field_list(cls)}")
    missing = [name for name, f in known.items()
               if name not in item and f.default is MISSING and f.default_factory is MISSING]
    if missing:
        raise EditError(f"{label}: missing field {', '.join(map(repr, missing))}",
                        hint=f"{kind} takes {_field_list(cls)}")
    values = {name: _read_field(cls, name, item[name], label) for name in known if name in item}
    edit = cls(**values)
    _check_limits(edit, label)
    return edit


_TEXT_FIELDS = {"node", "name", "value", "on", "op", "to", "domain"}


def _read_field(cls: type, name: str, raw: Any, label: str) -> Any:
    """A field's JSON value as the record holds it, or an EditError saying what it must be."""
    if cls is SetAttribute and name == "value" or cls is SetTensor and name == "value":
        _check_json_value(raw, label, name)
        return _frozen(raw)
    if cls is Rename and name in ("node", "value") and raw is None:
        return None
    if cls is Insert and name == "name" and raw is None:
        return None
    if name == "input":
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
            raise EditError(f"{label}: 'input' must be an input's position (0, 1, ...), "
                            f"not {raw!r}")
        return raw
    if name == "shape":
        if raw is None:
            return None
        if not isinstance(raw, list) or not all(
                isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in raw):
            raise EditError(f"{label}: 'shape' must be a list of sizes (e.g. [2, 3]), "
                            f"not {raw!r}")
        return tuple(raw)
    if name == "inputs":
        if not isinstance(raw, list):
            raise EditError(f"{label}: 'inputs' must be a list of value names or numbers")
        for entry in raw:
            if not isinstance(entry, str):
                _check_json_value(entry, label, "inputs")
        return tuple(_frozen(entry) for entry in raw)
    if name == "attributes":
        if not isinstance(raw, dict):
            raise EditError(f"{label}: 'attributes' must be an object of name: value")
        for key, value in raw.items():
            _check_json_value(value, label, f"attribute {key!r}")
        return tuple((key, _frozen(value)) for key, value in raw.items())
    if name == "consumers":
        if raw is None:
            return None
        if not isinstance(raw, list) or not raw or not all(isinstance(c, str) for c in raw):
            raise EditError(f"{label}: 'consumers' must be a non-empty list of node names")
        return tuple(raw)
    if name in _TEXT_FIELDS:
        if not isinstance(raw, str):
            raise EditError(f"{label}: {name!r} must be a name (text), not {_json_type(raw)}")
        if len(raw) > MAX_NAME_CHARS:
            raise EditError(f"{label}: {name!r} is {len(raw)} characters long, more than "
                            f"the {MAX_NAME_CHARS} allowed")
        return raw
    raise AssertionError(f"no reader for field {name} of {cls.__name__}")


def _check_json_value(raw: Any, label: str, what: str) -> None:
    """Numbers, text, booleans and lists of them: nothing else is an edit's value."""
    stack, count = [raw], 0
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
            continue
        count += 1
        if isinstance(item, float) and not math.isfinite(item):
            raise EditError(f"{label}: {what} holds {item}, which JSON cannot carry")
        if not isinstance(item, (int, float, str, bool)) and item is not None:
            raise EditError(f"{label}: {what} must be a number, text or a list of them, "
                            f"not {_json_type(item)}")
        if isinstance(item, str) and len(item) > MAX_NAME_CHARS * 8:
            raise EditError(f"{label}: {what} holds a text of {len(item)} characters")
    if count > MAX_TENSOR_VALUES:
        raise EditError(f"{label}: {what} holds {count} values, more than the "
                        f"{MAX_TENSOR_VALUES} an edit may give",
                        hint="set one number to fill a large tensor, or edit the model file")


def _check_limits(edit: Edit, label: str) -> None:
    if isinstance(edit, Rename) and (edit.node is None) == (edit.value is None):
        raise EditError(f"{label}: name exactly one of 'node' and 'value' to rename")
    if isinstance(edit, Rename) and not edit.to:
        raise EditError(f"{label}: 'to' must be a name, not empty")
    if isinstance(edit, Insert):
        _check_json_value([list(v) if isinstance(v, tuple) else v for v in edit.inputs],
                          label, "inputs")


def _frozen(value: Any) -> Any:
    """Lists as tuples, so records stay hashable and immutable."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


def thawed(value: Any) -> Any:
    """Tuples as lists: a frozen value as JSON data again."""
    if isinstance(value, tuple):
        return [thawed(v) for v in value]
    return value


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(thawed(value))
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _field_list(cls: type) -> str:
    names = []
    for f in fields(cls):
        optional = f.default is not MISSING or f.default_factory is not MISSING
        names.append(f"{f.name}{' (optional)' if optional else ''}")
    return ", ".join(names)


def _json_type(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a text", bool: "a boolean",
            type(None): "null"}.get(type(value), "a number")
