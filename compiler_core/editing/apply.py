"""Apply an edit list to an ONNX model: each edit checked, then applied; all of them or none.

The edits act on a working copy of the model as its file has it (names, not ids): each is
checked against the graph the edits before it left (the names it gives exist, its values fit),
applied, and the graph checked again (no cycle, still well typed); the result is imported as
any model is.  The first refusal raises an EditError naming the edit by its place and kind,
and the caller's model is never changed.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import onnx

from ..errors import EditError, GraphLabError
from ..ir import Graph, from_proto
from ..records import record_field
from .checking import TypeCheck, forget_types_below, name_every_node, sort_nodes
from .kinds import APPLY
from .model_index import ModelIndex
from .records import Edit, edit_label, edits_from_json, edits_to_json

EDITS_METADATA_KEY = "graphlab.edits"   # the edits a file was made with, as JSON


@dataclass
class EditedModel:
    """The model after the edits, and what they did (the record reports show)."""

    model: onnx.ModelProto = record_field(omit=True)
    graph: Graph = record_field(omit=True)
    edits: tuple[Edit, ...]
    nodes_before: int
    nodes_after: int
    touched_nodes: tuple[str, ...]    # nodes an edit changed or made, as named after the edits
    type_check: str                   # the check every edit was held to (strict/checker/none)

    json_derived = ("applied",)

    def applied(self) -> list[str]:
        """One line per edit, as people read it."""
        return [edit.describe() for edit in self.edits]

    def to_bytes(self) -> bytes:
        return self.model.SerializeToString()


def read_model_proto(source: str | os.PathLike | bytes | onnx.ModelProto) -> onnx.ModelProto:
    """A ModelProto of our own to edit: parsed from a path or bytes, or a copy of one given."""
    if isinstance(source, onnx.ModelProto):
        copy = onnx.ModelProto()
        copy.CopyFrom(source)
        return copy
    try:
        if isinstance(source, (bytes, bytearray, memoryview)):
            return onnx.load_from_string(bytes(source))
        return onnx.load(os.fspath(source))
    except Exception as err:  # noqa: BLE001 - protobuf and onnx raise many types
        raise GraphLabError(f"cannot read the model to edit: {err}",
                            hint="give an .onnx file GraphLab can load") from None


def apply_edits(source: str | os.PathLike | bytes | onnx.ModelProto, edits) -> EditedModel:
    """The model ``source`` with ``edits`` (records or their JSON) applied, checked and
    imported; an EditError names the first edit refused, and nothing is applied then."""
    edits = edits_from_json(list(edits))
    model = read_model_proto(source)
    nodes_before = len(model.graph.node)
    touched, level = _apply(model, edits)
    try:
        graph = from_proto(model)
    except GraphLabError as err:
        blamed = _first_refused(source, edits)
        if blamed is None:
            raise   # the model as given is refused: no edit is to blame
        raise EditError(f"{blamed}: the edited model cannot be loaded: {err.message}",
                        where=err.where, hint=err.hint) from None
    names = {n.name for n in model.graph.node}
    return EditedModel(model, graph, tuple(edits), nodes_before, len(model.graph.node),
                       tuple(dict.fromkeys(n for n in touched if n in names)), level)


def _apply(model: onnx.ModelProto, edits: list[Edit]) -> tuple[list[str], str]:
    """Apply ``edits`` to ``model`` in place, each checked; the nodes they touched and the
    type check they were held to."""
    name_every_node(model)
    if not edits:
        return [], "none"
    check = TypeCheck(model)
    touched: list[str] = []
    for position, edit in enumerate(edits):
        label = edit_label(position, edit)
        changed = APPLY[type(edit)](model, ModelIndex(model), edit, label)
        sort_nodes(model, label)
        forget_types_below(model, changed.values)
        check.check(model, label)
        touched += sorted(changed.nodes)
    _remember(model, edits)
    return touched, check.level


def _first_refused(source, edits: list[Edit]) -> str | None:
    """The first edit after which the importer refuses the model (each prefix applied
    afresh: this runs only when the whole list was refused); None when the model is refused
    before any edit."""
    for count in range(len(edits)):
        model = read_model_proto(source)
        _apply(model, edits[:count])
        try:
            from_proto(model)
        except GraphLabError:
            return edit_label(count - 1, edits[count - 1]) if count else None
    return edit_label(len(edits) - 1, edits[-1])


def _remember(model: onnx.ModelProto, edits: list[Edit]) -> None:
    """Write the edits into the model's metadata (after any it was made with before)."""
    earlier = []
    for position in reversed(range(len(model.metadata_props))):
        entry = model.metadata_props[position]
        if entry.key == EDITS_METADATA_KEY:
            try:
                earlier = json.loads(entry.value)
            except json.JSONDecodeError:
                earlier = []
            del model.metadata_props[position]
    onnx.helper.set_model_props(model, {
        **{p.key: p.value for p in model.metadata_props},
        EDITS_METADATA_KEY: json.dumps([*earlier, *edits_to_json(edits)])})
