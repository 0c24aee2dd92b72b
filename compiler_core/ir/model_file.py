"""Writing a model to disk within the format's limits: one .onnx file, or an .onnx file and
one external data file beside it holding the weights.

Models whose weights would take the file past protobuf's 2 GiB limit (``model_limits``) get
external data automatically; smaller ones only when asked.  Both files are written under
temporary names and renamed at the end, so a refused or failed write leaves nothing behind
that looks like a model.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .exporter import ExternalData, to_model_proto, write_model
from .graph import Graph
from .model_limits import PROTOBUF_LIMIT, ModelTooLargeError, format_size, weights_nbytes

EXTERNAL_MIN_BYTES = 1024  # smaller tensors stay inside the .onnx (onnx's own default)


@dataclass
class SavedModel:
    """Where a model went: the .onnx file and, if any, the external data file."""

    path: str
    model_bytes: int
    data_path: str | None = None
    data_bytes: int = 0

    def describe(self) -> str:
        """`wrote m.onnx` or `wrote m.onnx, its weights in m.onnx.data (2.31 GiB)`."""
        text = f"wrote {self.path}"
        if self.data_path:
            text += f", its weights in {self.data_path} ({format_size(self.data_bytes)})"
        return text

    def to_dict(self) -> dict:
        return {"path": self.path, "bytes": self.model_bytes, "data_path": self.data_path,
                "data_bytes": self.data_bytes}


def needs_external_data(graph: Graph) -> bool:
    """Whether the weights alone would take a single file past the limit."""
    structure = len(to_model_proto(graph, weights="none").SerializeToString())
    return weights_nbytes(graph) + structure > PROTOBUF_LIMIT


def save_model(graph: Graph, path: str | os.PathLike,
               external_data: bool | None = None) -> SavedModel:
    """Write ``graph`` to ``path``; with ``external_data`` (None: when needed) the weights go
    to ``<path>.data`` beside it, written straight from their arrays."""
    target = Path(path)
    if external_data is None:
        external_data = needs_external_data(graph)
    data_target = target.with_name(target.name + ".data") if external_data else None
    partial = target.with_name(target.name + ".partial")
    partial_data = data_target.with_name(data_target.name + ".partial") if data_target else None
    try:
        with open(partial, "wb", buffering=1 << 20) as handle:
            counter = _CountingWriter(handle)
            if data_target is None:
                write_model(graph, counter.write)
                data_bytes = 0
            else:
                with open(partial_data, "wb", buffering=1 << 20) as data_handle:
                    external = ExternalData(data_handle, data_target.name, EXTERNAL_MIN_BYTES)
                    write_model(graph, counter.write, external)
                    data_bytes = external.size
        if counter.count > PROTOBUF_LIMIT:
            raise ModelTooLargeError(
                f"{target.name} would be {format_size(counter.count)}, over protobuf's 2 GiB "
                f"limit" + (" even with its weights in external data: the graph's structure "
                            "itself (large attributes or many small constants) is too big"
                            if data_target else ""), where=str(target),
                hint="write it with external data (--external-data)" if data_target is None
                else "no ONNX file can hold this graph; split the model")
        if partial_data is not None and data_bytes:
            os.replace(partial_data, data_target)
        elif partial_data is not None:  # every tensor was small enough to stay inline
            data_target = None
        os.replace(partial, target)
    finally:
        for leftover in (partial, partial_data):
            if leftover is not None and leftover.exists():
                leftover.unlink()
    return SavedModel(str(target), counter.count, str(data_target) if data_target else None,
                      data_bytes)


class _CountingWriter:
    """Writes through to a file and counts the bytes (the .onnx size decides validity)."""

    def __init__(self, handle):
        self.handle, self.count = handle, 0

    def write(self, piece) -> None:
        self.handle.write(piece)
        self.count += len(piece) if isinstance(piece, bytes) else piece.nbytes
