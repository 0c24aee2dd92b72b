"""Safe loading of tensors stored outside the .onnx file ("external data").

A model names a file for each external tensor.  A hostile or careless model can name an absolute
path or climb out of its directory (``../../etc/passwd``); such references are refused before
anything is opened.  Offsets and lengths are checked against the file's size.
"""

from __future__ import annotations

import os
from typing import Iterator

import onnx
from onnx import TensorProto

from ..errors import ModelLoadError
from .tensors import declared_bytes


def iter_tensors(graph: onnx.GraphProto) -> Iterator[tuple[TensorProto, str]]:
    """Every tensor of a graph and its bodies, with a description for error messages."""
    for tensor in graph.initializer:
        yield tensor, f"initializer {tensor.name!r}"
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                yield attr.t, f"attribute {attr.name!r} of node {node.name or node.op_type!r}"
            elif attr.type == onnx.AttributeProto.GRAPH:
                yield from iter_tensors(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for sub in attr.graphs:
                    yield from iter_tensors(sub)


def load_external_data(graph: onnx.GraphProto, base_dir: str | None) -> None:
    """Read every external tensor into its proto, refusing unsafe locations."""
    for tensor, what in iter_tensors(graph):
        if tensor.data_location != TensorProto.EXTERNAL:
            continue
        info = {e.key: e.value for e in tensor.external_data}
        location = info.get("location", "")
        path = _safe_path(location, base_dir, what)
        offset = int(info.get("offset", 0) or 0)
        expected = declared_bytes(tensor, what)
        length = int(info["length"]) if info.get("length") else expected
        if length != expected:
            raise ModelLoadError(f"{what} declares {expected} bytes but its external data "
                                 f"entry says {length}", where=tensor.name,
                                 hint="the external data file and the model do not match")
        if not os.path.isfile(path):
            raise ModelLoadError(f"{what} is stored in {location!r}, which does not exist next "
                                 f"to the model", where=tensor.name,
                                 hint="copy the external data file beside the .onnx file")
        if offset < 0 or offset + length > os.path.getsize(path):
            raise ModelLoadError(f"{what} reads bytes {offset}..{offset + length} of "
                                 f"{location!r}, which has only {os.path.getsize(path)}",
                                 where=tensor.name, hint="the external data file is truncated")
        with open(path, "rb") as handle:
            handle.seek(offset)
            tensor.raw_data = handle.read(length)
        tensor.data_location = TensorProto.DEFAULT
        del tensor.external_data[:]


def _safe_path(location: str, base_dir: str | None, what: str) -> str:
    if not location:
        raise ModelLoadError(f"{what} is marked external but names no file", where=what)
    if base_dir is None:
        raise ModelLoadError(f"{what} is stored in an external file {location!r}, but the model "
                             f"was given as bytes, not as a path", where=what,
                             hint="load the model from its file so its directory is known")
    if os.path.isabs(location) or location.startswith(("/", "\\")) or ":" in location[:3]:
        raise ModelLoadError(f"{what} names an absolute external data path {location!r}; "
                             f"refused", where=what,
                             hint="external data must be a relative path inside the model's "
                                  "directory")
    base = os.path.realpath(base_dir)
    path = os.path.realpath(os.path.join(base, location))
    if os.path.commonpath([base, path]) != base:
        raise ModelLoadError(f"{what} names external data {location!r} outside the model's "
                             f"directory; refused", where=what,
                             hint="external data must be a relative path inside the model's "
                                  "directory")
    return path
