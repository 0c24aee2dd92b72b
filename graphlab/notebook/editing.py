"""`graphlab.edit(model)`: edits in a notebook, one call each, read as a model anywhere.

    edited = graphlab.edit("teach_conv_bn").delete("relu_side")
    graphlab.compile(edited)            # the fusion the side branch blocked now fires
    edited.edits                         # the edits as data (what `graphlab edit` reads)
    edited.effect()                      # how much the outputs move, run in onnxruntime

Every call returns a new editor with one more edit, checked at once (a refused edit raises
an EditError naming it); an editor is a model to every API that takes one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

from compiler_core.editing import (Bypass, Delete, EditedModel, Insert, Rename, Rewire,
                                   SetAttribute, SetTensor, apply_edits, edits_from_json,
                                   edits_to_json)
from compiler_core.editing.effect import NumericalEffect, numerical_effect
from compiler_core.editing.suggestions import Suggestion, suggest_edits
from compiler_core.ir import Graph, SavedModel, save_model, to_bytes

from ..samples import size_hints
from .models import Model, ModelLike, read_model


def edit(model: ModelLike, edits: list | None = None) -> "ModelEditor":
    """An editor of ``model`` (a path, sample name, bytes, ModelProto, Graph, CompileResult),
    starting with ``edits`` (records or their JSON, e.g. read from a file)."""
    read = read_model(model)
    source = read.path if read.path else to_bytes(read.graph)
    return ModelEditor(source, read.label, read.path, tuple(edits_from_json(list(edits or []))))


class ModelEditor:
    """A model and the edits made to it so far (see the module docstring)."""

    def __init__(self, source: str | bytes, label: str, path: str | None, edits: tuple):
        self._source, self.label, self._path = source, label, path
        self._edited: EditedModel = apply_edits(source, edits)

    # -- one method per kind of edit -------------------------------------------------------------
    def set_attribute(self, node: str, name: str, value: Any) -> "ModelEditor":
        """Give ``node`` attribute ``name`` the value ``value`` (None removes it)."""
        return self._with(SetAttribute(node, name, _data(value)))

    def set_tensor(self, name: str, value: Any, shape: tuple[int, ...] | None = None
                   ) -> "ModelEditor":
        """Give constant ``name`` the value ``value`` (a number fills it; an array or list
        gives every element); its shape is kept unless ``shape`` is given."""
        return self._with(SetTensor(name, _data(value), tuple(shape) if shape else None))

    def bypass(self, node: str) -> "ModelEditor":
        """Remove ``node``: what read its first output reads its first input."""
        return self._with(Bypass(node))

    def rewire(self, node: str, input: int, value: str) -> "ModelEditor":  # noqa: A002
        """Make input ``input`` of ``node`` read ``value``."""
        return self._with(Rewire(node, input, value))

    def delete(self, node: str) -> "ModelEditor":
        """Remove ``node`` (nothing may read it but the graph's outputs) and what fed only it."""
        return self._with(Delete(node))

    def insert(self, op: str, on: str, inputs: tuple = (), attributes: dict | None = None,
               consumers: list[str] | None = None, name: str | None = None,
               domain: str = "") -> "ModelEditor":
        """Put a new ``op`` node on the edge out of value ``on`` (before ``consumers``, or
        every reader of it)."""
        return self._with(Insert(op, on, tuple(_data(v) for v in inputs),
                                 tuple((k, _data(v)) for k, v in (attributes or {}).items()),
                                 tuple(consumers) if consumers else None, name, domain))

    def rename(self, *, to: str, node: str | None = None, value: str | None = None
               ) -> "ModelEditor":
        """Call node ``node`` (or value ``value``) ``to``."""
        return self._with(Rename(to, node, value))

    # -- what it gives --------------------------------------------------------------------------
    @property
    def edits(self) -> list[dict]:
        """The edits as JSON data: save them with json.dump, give them to `graphlab edit`."""
        return edits_to_json(self._edited.edits)

    @property
    def record(self) -> EditedModel:
        """What the edits did (``to_json`` writes it as `graphlab edit --json` does)."""
        return self._edited

    @property
    def model(self) -> onnx.ModelProto:
        return self._edited.model

    @property
    def graph(self) -> Graph:
        return self._edited.graph

    def as_model(self) -> Model:
        """The edited model, for every API that takes a model."""
        return Model(self._edited.graph, f"{self.label} (edited)")

    def save(self, path: str) -> SavedModel:
        return save_model(self._edited.graph, path)

    def effect(self, bindings: dict[str, int] | None = None,
               inputs: dict | None = None) -> NumericalEffect:
        """How much the edits move each output: both models run in onnxruntime."""
        return numerical_effect(apply_edits(self._source, []).graph, self._edited.graph,
                                bindings, inputs)

    def suggest(self, pipeline: str = "O2", bindings: dict[str, int] | None = None
                ) -> list[Suggestion]:
        """Fixes that make a near miss of ``pipeline`` fire on the model as edited so far,
        each tried, with its effect (`graphlab edit MODEL --suggest`)."""
        return suggest_edits(self._source, pipeline, bindings,
                             size_hints(self._path) if self._path else {}, self._edited.edits)

    def _with(self, edit) -> "ModelEditor":
        return ModelEditor(self._source, self.label, self._path, (*self._edited.edits, edit))

    def __repr__(self) -> str:
        lines = [f"{self.label}: {len(self._edited.edits)} edits, "
                 f"{self._edited.nodes_before} -> {self._edited.nodes_after} nodes"]
        lines += [f"  {i}. {line}" for i, line in enumerate(self._edited.applied(), start=1)]
        return "\n".join(lines)


def _data(value: Any) -> Any:
    """numpy values as the JSON data edits hold."""
    if isinstance(value, (np.ndarray, np.generic)):
        value = value.tolist()
    if isinstance(value, list):
        return tuple(_data(v) for v in value)
    if isinstance(value, tuple):
        return tuple(_data(v) for v in value)
    return value
