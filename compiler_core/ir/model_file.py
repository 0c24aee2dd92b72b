"""Writing a model to disk within the format's limits: one .onnx file, or an .onnx file and
one external data file beside it holding the weights.

Models that would take one file past protobuf's 2 GiB limit (``model_limits``) get external
data automatically; smaller ones only when asked.  The single file's exact size is known
before anything is written (``exporter.model_pieces``), so it is measured, not estimated.
Files are written under temporary names and renamed at the end, so a refused or failed write
leaves nothing behind that looks like a model.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from .collection import collection_paused
from .exporter import (ExternalData, model_pieces, piece_size, pieces_size, to_bytes,
                       write_model, write_to_file)
from ..errors import GraphLabError
from ..records import record_field
from .graph import Graph
from .model_limits import PROTOBUF_LIMIT, ModelTooLargeError, format_size

EXTERNAL_MIN_BYTES = 1024  # smaller tensors stay inside the .onnx (onnx's own default)


@dataclass
class SavedModel:
    """Where a model went: the .onnx file and, if any, the external data file."""

    path: str
    model_bytes: int = record_field(key="bytes")
    data_path: str | None = None
    data_bytes: int = 0

    def describe(self) -> str:
        """`wrote m.onnx` or `wrote m.onnx, its weights in m.onnx.data (2.31 GiB)`."""
        text = f"wrote {self.path}"
        if self.data_path:
            text += f", its weights in {self.data_path} ({format_size(self.data_bytes)})"
        return text


@collection_paused
def save_model(graph: Graph, path: str | os.PathLike,
               external_data: bool | None = None) -> SavedModel:
    """Write ``graph`` to ``path``; with ``external_data`` (None: when one file would pass the
    limit) the weights go to ``<path>.data`` beside it, written straight from their arrays.
    A write the system refuses (no such folder, a full disk) is a ModelWriteError."""
    target = Path(path)
    if not target.parent.is_dir():
        raise ModelWriteError(f"cannot write {target}: the folder {target.parent} does not "
                              f"exist", where=str(target), hint="create it first")
    try:
        return _save(graph, target, external_data)
    except OSError as err:
        raise ModelWriteError(f"cannot write {target}: {err.strerror or err}",
                              where=str(target)) from None


def _save(graph: Graph, target: Path, external_data: bool | None) -> SavedModel:
    single = None if external_data else model_pieces(graph)  # views: nothing copied
    if single is not None and pieces_size(single) > PROTOBUF_LIMIT:
        if external_data is False:
            raise ModelTooLargeError(
                f"{target.name} would be {format_size(pieces_size(single))}, over protobuf's "
                f"2 GiB limit", where=str(target),
                hint="write it with external data (--external-data)")
        single = None
    partial = target.with_name(target.name + ".partial")
    if single is not None:
        try:
            with open(partial, "wb", buffering=1 << 20) as handle:
                write_to_file(handle, single)
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
        return SavedModel(str(target), pieces_size(single))
    return _save_with_external_data(graph, target, partial)


def _save_with_external_data(graph: Graph, target: Path, partial: Path) -> SavedModel:
    data_target = target.with_name(target.name + ".data")
    partial_data = data_target.with_name(data_target.name + ".partial")
    try:
        with open(partial, "wb", buffering=1 << 20) as handle, \
                open(partial_data, "wb", buffering=1 << 20) as data_handle:
            counter = _CountingWriter(handle)
            external = ExternalData(data_handle, data_target.name, EXTERNAL_MIN_BYTES)
            write_model(graph, counter.write, external)
        if counter.count > PROTOBUF_LIMIT:
            raise ModelTooLargeError(
                f"{target.name} would be {format_size(counter.count)}, over protobuf's 2 GiB "
                f"limit even with its weights in external data: the graph's structure itself "
                f"(large attributes or many small constants) is too big", where=str(target),
                hint="no ONNX file can hold this graph; split the model")
        if external.size:
            os.replace(partial_data, data_target)
        os.replace(partial, target)
    finally:
        for leftover in (partial, partial_data):
            leftover.unlink(missing_ok=True)
    return SavedModel(str(target), counter.count,
                      str(data_target) if external.size else None, external.size)


@contextmanager
def model_for_runtime(graph: Graph) -> Iterator[bytes | Path]:
    """The model as onnxruntime takes it: its bytes, or, past protobuf's 2 GiB limit, the path
    of a temporary copy with its weights in external data (removed afterwards; in
    ``GRAPHLAB_SCRATCH_DIR`` when that is set)."""
    try:
        data = to_bytes(graph)
    except ModelTooLargeError:
        data = None
    if data is not None:
        yield data
        return
    with tempfile.TemporaryDirectory(prefix="graphlab-model-",
                                     dir=os.environ.get("GRAPHLAB_SCRATCH_DIR")) as folder:
        path = Path(folder) / "model.onnx"
        save_model(graph, path, external_data=True)
        yield path


class ModelWriteError(GraphLabError):
    """The system refused a model's file (nothing is left behind)."""


class _CountingWriter:
    """Writes through to a file and counts the bytes (the .onnx size decides validity)."""

    def __init__(self, handle):
        self.handle, self.count = handle, 0

    def write(self, piece) -> None:
        write_to_file(self.handle, [piece])
        self.count += piece_size(piece)
