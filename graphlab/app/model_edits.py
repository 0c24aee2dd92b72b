"""The app's edits: the view's edit list as its URL carries it, the model source it makes, what
the inspector can edit on a node, and the suggestion builds.

An edited model is a model source of its own (`EditedSource`: the original's bytes and the
edits, keyed by both), so its pipeline is a build like any other — in a builder process, with
progress, shared by every browser that names the same edits — and a refused edit is the
build's message.  On a shared server edits are data only (JSON records, never code), they act
on the model this browser names (a sample, the `--model` file, or its own upload), and the
view's list is capped (`MAX_VIEW_EDITS`, `MAX_VIEW_EDITS_CHARS`) so a URL stays a URL.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass, fields

import numpy as np

from compiler_core.editing import (Edit, apply_edits, edit_from_json, edits_from_json,
                                   edits_to_json)
from compiler_core.editing.suggestions import Suggestion, suggest_edits
from compiler_core.errors import EditError
from compiler_core.ir import Graph, Node
from compiler_core.ir.attributes import A

from .builds import BuildJob
from .workbench import ModelSource, Workspace

MAX_VIEW_EDITS = 40            # edits one view may hold
MAX_VIEW_EDITS_CHARS = 4000    # their JSON, as the URL carries it
SHOWN_VALUES = 16              # a constant with at most this many numbers is shown to edit
SUGGEST_TRIALS = 6             # pipeline runs one suggestion build may spend
# Attribute types the inspector offers to edit, as text the edit reads as JSON.
EDITABLE_ATTRIBUTES = {A.INT, A.FLOAT, A.STRING, A.INTS, A.FLOATS, A.STRINGS}


# ---- the view's list ---------------------------------------------------------------------
def read_view_edits(text: str) -> list[Edit]:
    """The edit records of a view's ``edits`` text ('' : none), within the view's limits."""
    if not text:
        return []
    if len(text) > MAX_VIEW_EDITS_CHARS:
        raise EditError(f"the view's edits take {len(text)} characters, more than the "
                        f"{MAX_VIEW_EDITS_CHARS} a link may carry",
                        hint="undo some, or download the edited model and open it instead")
    edits = edits_from_json(_json(text), "the view's edits")
    if len(edits) > MAX_VIEW_EDITS:
        raise EditError(f"the view holds {len(edits)} edits, more than the {MAX_VIEW_EDITS} "
                        f"the page keeps", hint="download the edited model and open it")
    return edits


def edits_text(edits: list[Edit]) -> str:
    """The compact JSON text of an edit list ('' for none): what the URL's `edits=` holds."""
    return json.dumps(edits_to_json(edits), separators=(",", ":")) if edits else ""


def with_edits(text: str, *more: Edit | dict) -> str:
    """The view's edits with ``more`` after them, each checked as data (not yet applied)."""
    edits = read_view_edits(text)
    return edits_text([*edits, *(edit_from_json(e, len(edits) + i) for i, e in enumerate(more))])


def without_edit(text: str, index: int) -> str:
    """The view's edits without edit ``index`` (from 0)."""
    edits = read_view_edits(text)
    return edits_text(edits[:index] + edits[index + 1:])


def _json(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise EditError(f"the view's edits are not JSON: {err}",
                        hint="open the model again without them") from None


# ---- the source they make -------------------------------------------------------------------
@dataclass(frozen=True)
class EditedSource(ModelSource):
    """A model source with edits applied as it loads: the original's bytes where they lie
    (a sample, a file, an upload's digest) and the edits, keyed by both."""

    edits: tuple[Edit, ...] = ()

    def load(self) -> Graph:
        return self.edited().graph

    def original_bytes(self) -> bytes | None:
        return self.edited().to_bytes()

    def edited(self):
        return apply_edits(self._located(), self.edits)


def edited_source(source: ModelSource, text: str) -> ModelSource:
    """``source`` with the view's edits (itself when there are none)."""
    edits = read_view_edits(text)
    if not edits:
        return source
    digest = hashlib.sha256(f"{source.digest} {edits_text(edits)}".encode()).hexdigest()
    kept = {f.name: getattr(source, f.name) for f in fields(ModelSource)}
    count = f"{len(edits)} edit{'s' if len(edits) != 1 else ''}"
    return EditedSource(**{**kept, "digest": "sha256:" + digest,
                           "label": f"{source.label} ({count})"}, edits=tuple(edits))


# ---- what the inspector can edit on a node -----------------------------------------------------
@dataclass(frozen=True)
class EditableInput:
    index: int
    value: str            # the value's name ('' : an optional input left out)
    constant: bool        # an initializer or a Constant's output: set_tensor can set it
    shape: tuple | None
    shown: str            # its value as JSON text, when small enough to edit ('' otherwise)


@dataclass(frozen=True)
class EditableNode:
    """A node of the model as loaded (the edits named by its name), and what can be edited."""

    name: str
    op_type: str
    attributes: tuple[tuple[str, str], ...]   # (name, value as JSON text) of the editable ones
    inputs: tuple[EditableInput, ...]
    outputs: tuple[str, ...]


def editable_node(workspace: Workspace, node_id: int) -> EditableNode | str:
    """The node ``node_id`` as the model the pipeline started from has it, or why it cannot
    be edited there (a pass made it)."""
    initial = workspace.result.initial
    node = initial.node_by_id(node_id)
    if node is None:
        made = workspace.history.made_in.get(node_id)
        by = workspace.result.snapshots[made].pass_name if made is not None else "a pass"
        return (f"{by} made this node: edit the nodes of the model it was made from "
                f"(select them at the pass before it)")
    return EditableNode(node.name, node.op_type, tuple(_attributes(node)),
                        tuple(_input(i, v) for i, v in enumerate(node.inputs)),
                        tuple(v.name for v in node.outputs if v is not None))


def _attributes(node: Node):
    for name, value in node.attrs.items():
        if node.attr_types.get(name) in EDITABLE_ATTRIBUTES:
            yield name, json.dumps(_plain(value))


def _input(index: int, value) -> EditableInput:
    if value is None:
        return EditableInput(index, "", False, None, "")
    data = value.constant_data() if value.is_constant else None   # not read: it may be big
    constant = data is not None
    shown = ""
    if constant and int(np.prod(data.shape)) <= SHOWN_VALUES:
        small = value.constant_value()
        if small.dtype.kind in "fiub":
            shown = json.dumps(_plain(small.tolist()))
    return EditableInput(index, value.name, constant, value.shape, shown)


def _plain(value):
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and np.isfinite(value):
        return float(str(np.float32(value)))   # the shortest text that reads back the same
    return value


def read_typed_value(text: str, what: str):
    """A value typed in a box, read as JSON (a bare word is taken as text)."""
    text = (text or "").strip()
    if not text:
        raise EditError(f"type a value for {what}", hint="a number, a list like [1, 2] or text")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        if re.fullmatch(r"[A-Za-z_][\w.\-]*", text):   # a bare word: text (an auto_pad mode)
            return text
        raise EditError(f"cannot read {text!r} as a value for {what}",
                        hint="write a number, a list like [1, 2] or text") from None


# ---- suggestions, as builds ----------------------------------------------------------------------
def suggestion_job(source: ModelSource, text: str, pipeline: str, bindings: dict[str, int],
                   site: str) -> BuildJob:
    """Fixes for the near misses at node ``site`` of the view's model (after its edits),
    each tried by running the pipeline again: a build, so no request waits for it."""
    key = hashlib.sha256(repr(("suggest", source.digest, text, pipeline,
                               sorted(bindings.items()), site)).encode()).hexdigest()
    return BuildJob(key, f"fixes for {site}",
                    functools.partial(_suggest, source, text, pipeline,
                                      tuple(sorted(bindings.items())), site))


def _suggest(source: ModelSource, text: str, pipeline: str,
             bindings: tuple[tuple[str, int], ...], site: str,
             _on_progress=None) -> list[Suggestion]:
    return suggest_edits(source._located(), pipeline, dict(bindings), dict(source.size_hints),
                         read_view_edits(text), site=site, trials=SUGGEST_TRIALS)
