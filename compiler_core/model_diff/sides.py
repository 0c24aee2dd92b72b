"""The models a comparison puts side by side besides two files: a model after a pipeline, and
the model onnxruntime's own optimizer makes of it (what a user's session actually runs)."""

from __future__ import annotations

import os

from ..ir import Graph, load_model, to_bytes
from ..ir.external_data import has_external_data
from ..ir.importer import parse_model_bytes
from ..compilation import compile_model
from ..runtime_check import check_level, onnxruntime_optimized


def after_pipeline(graph: Graph, pipeline: str | list[str],
                   bindings: dict[str, int] | None = None, target: str | None = None,
                   on_progress=None) -> Graph:
    """The graph the pipeline leaves (its last snapshot)."""
    return compile_model(graph, pipeline, bindings, target, on_progress=on_progress).final


def onnxruntime_version(graph: Graph, level: str, original: bytes | None = None) -> Graph:
    """onnxruntime's optimized model at ``level`` (basic, extended, all), made in a child
    process and imported (onnxruntime's own ops load as opaque nodes).  ``original``: the
    model file's bytes, so onnxruntime sees exactly the user's file; without them (or when
    they name external data files) it optimizes GraphLab's export of ``graph``."""
    check_level(level)
    usable = original is not None and not has_external_data(parse_model_bytes(original, "model"))
    return load_model(onnxruntime_optimized(original if usable else to_bytes(graph), level))


def file_bytes(path: str) -> bytes | None:
    """A model file's bytes (None for a file too big to hand over whole)."""
    return None if os.path.getsize(path) >= 1 << 31 else open(path, "rb").read()


def onnxruntime_label(level: str) -> str:
    """'onnxruntime extended': what the model is called in a comparison."""
    return f"onnxruntime {check_level(level)}"
