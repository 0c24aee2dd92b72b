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


def load_external_data(graph: onnx.GraphProto, base_dir: str | None,
                       files: dict[str, bytes] | None = None) -> None:
    """Read every external tensor into its proto, refusing unsafe locations.

    The data comes from files beside the model (``base_dir``) or, for uploads, from ``files``:
    the companion files' bytes by name (nothing is read from disk then).
    """
    for tensor, what in iter_tensors(graph):
        if tensor.data_location != TensorProto.EXTERNAL:
            continue
        info = {e.key: e.value for e in tensor.external_data}
        location = info.get("location", "")
        offset = int(info.get("offset", 0) or 0)
        expected = declared_bytes(tensor, what)
        length = int(info["length"]) if info.get("length") else expected
        if length != expected:
            raise ModelLoadError(f"{what} declares {expected} bytes but its external data "
                                 f"entry says {length}", where=tensor.name,
                                 hint="the external data file and the model do not match")
        if files is not None:
            data = _uploaded_file(files, location, what)
            size = len(data)
        else:
            path = _existing_path(location, base_dir, what)
            size = os.path.getsize(path)
        if offset < 0 or offset + length > size:
            raise ModelLoadError(f"{what} reads bytes {offset}..{offset + length} of "
                                 f"{location!r}, which has only {size}",
                                 where=tensor.name, hint="the external data file is truncated")
        if files is not None:
            tensor.raw_data = data[offset:offset + length]
        else:
            with open(path, "rb") as handle:
                handle.seek(offset)
                tensor.raw_data = handle.read(length)
        tensor.data_location = TensorProto.DEFAULT
        del tensor.external_data[:]


def has_external_data(model: onnx.ModelProto) -> bool:
    return any(t.data_location == TensorProto.EXTERNAL for t, _ in iter_tensors(model.graph))


def embed_external_data(model: onnx.ModelProto, files: dict[str, bytes]) -> None:
    """Move the data of an uploaded model's companion files (e.g. `model.onnx.data`) into it."""
    load_external_data(model.graph, None, files)


def _uploaded_file(files: dict[str, bytes], location: str, what: str) -> bytes:
    data = files.get(location, files.get(os.path.basename(location.replace("\\", "/"))))
    if data is None:
        raise ModelLoadError(f"{what} is stored in {location!r}, which was not uploaded with "
                             f"the model", where=what,
                             hint=f"select the .onnx file and {os.path.basename(location)!r} "
                                  f"together when uploading")
    return data


def _existing_path(location: str, base_dir: str | None, what: str) -> str:
    path = _safe_path(location, base_dir, what)
    if not os.path.isfile(path):
        raise ModelLoadError(f"{what} is stored in {location!r}, which does not exist next "
                             f"to the model", where=what,
                             hint="copy the external data file beside the .onnx file")
    return path


def _safe_path(location: str, base_dir: str | None, what: str) -> str:
    if not location:
        raise ModelLoadError(f"{what} is marked external but names no file", where=what)
    if base_dir is None:
        raise ModelLoadError(f"{what} is stored in an external file {location!r}, but the model "
                             f"was given as bytes, not as a path", where=what,
                             hint="load the model from its file so its directory is known, "
                                  "or upload the data file together with the .onnx file")
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
