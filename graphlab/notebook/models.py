"""Whatever a notebook user holds as "a model", read into a Graph with a label to call it by."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, Union, runtime_checkable

import onnx

from compiler_core.errors import GraphLabError
from compiler_core.ir import Graph, load_model
from compiler_core.model_diff import ModelDiff, diff_models

from ..samples import get_sample, resolve_model

if TYPE_CHECKING:
    from .result import CompileResult

ModelLike = Union[str, os.PathLike, bytes, onnx.ModelProto, Graph, "CompileResult", "Model"]


@runtime_checkable
class ReadsAsModel(Protocol):
    """Anything that says which model it stands for (a CompileResult: its final graph)."""

    def as_model(self) -> "Model": ...


@dataclass(frozen=True)
class Model:
    graph: Graph
    label: str
    path: str | None = None      # the file it came from (a sample's or the user's)
    sample: str | None = None    # the sample's name, when it is one


def read_model(model: ModelLike) -> Model:
    """A path or sample name, model bytes, an onnx ModelProto, a Graph, or a CompileResult
    (its final graph: GraphLab's output)."""
    if isinstance(model, Model):
        return model
    if isinstance(model, ReadsAsModel):
        return model.as_model()
    if isinstance(model, Graph):
        return Model(model, model.name)
    if isinstance(model, onnx.ModelProto):
        return Model(load_model(model.SerializeToString()), model.graph.name or "model")
    if isinstance(model, (bytes, bytearray)):
        return Model(load_model(bytes(model)), "model")
    if isinstance(model, (str, os.PathLike)):
        name = os.fspath(model)
        path = resolve_model(name)
        sample = name if get_sample(name) is not None and not os.path.exists(name) else None
        return Model(load_model(path), sample or os.path.basename(path), path, sample)
    raise GraphLabError(f"cannot read a {type(model).__name__} as a model",
                        hint="give a path, a sample name, model bytes, an onnx.ModelProto or a "
                             "GraphLab Graph")


def diff(a: ModelLike, b: ModelLike) -> ModelDiff:
    """Match the nodes of two models that share no ids and say what differs (the record of
    `graphlab diff --json`; ``.by_op()``, ``.changed_pairs``, ``.only_a``, ``.only_b``)."""
    first, second = read_model(a), read_model(b)
    a_label, b_label = first.label, second.label
    if a_label == b_label:
        a_label, b_label = f"A: {a_label}", f"B: {b_label}"
    return diff_models(first.graph, second.graph, a_label, b_label)
