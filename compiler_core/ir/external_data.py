"""Safe access to tensors stored outside the .onnx file ("external data").

A model names a file for each external tensor; the importer maps it and keeps each tensor as
a range of it (``StoredTensor``), read only when its values are needed.  A hostile or
careless model can name an absolute path or climb out of its directory
(``../../etc/passwd``); such references are refused before anything is opened.  Offsets and
lengths are checked against the file's size.
"""

from __future__ import annotations

import os
from typing import Iterable, Iterator

import onnx
from onnx import TensorProto

from ..errors import ModelLoadError
from .lazy_tensors import InMemory, MappedFile, StoredTensor
from .tensors import declared_bytes


def iter_tensors(graph: onnx.GraphProto, initializers: bool = True,
                 skip_nodes: "set[int] | dict" = frozenset()
                 ) -> Iterator[tuple[TensorProto, str]]:
    """Every tensor of a graph and its bodies, with a description for error messages; without
    ``initializers``, all but the graph's own initializers (those held by attributes and
    control-flow bodies); none of the graph's nodes whose index is in ``skip_nodes``."""
    if initializers:
        for tensor in graph.initializer:
            yield tensor, f"initializer {tensor.name!r}"
    for index, node in enumerate(graph.node):
        if index in skip_nodes:
            continue
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                yield attr.t, f"attribute {attr.name!r} of node {node.name or node.op_type!r}"
            elif attr.type == onnx.AttributeProto.GRAPH:
                yield from iter_tensors(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for sub in attr.graphs:
                    yield from iter_tensors(sub)


def external_tensor(tensor: TensorProto, what: str, base_dir: str | None,
                    files: dict[str, bytes] | None = None) -> StoredTensor:
    """Where an external tensor's bytes are, checked: a range of its mapped data file (beside
    the model: ``base_dir``) or, for uploads, of one of ``files`` (the companion files' bytes
    by name; nothing is read from disk then).  Unsafe locations are refused before anything
    is opened; offsets and lengths are checked against the file's size."""
    info = {e.key: e.value for e in tensor.external_data}
    location = info.get("location", "")
    offset = _number(info.get("offset"), "offset", what, tensor.name)
    expected = declared_bytes(tensor, what)
    length = _number(info.get("length"), "length", what, tensor.name) \
        if info.get("length") else expected
    if length != expected:
        raise ModelLoadError(f"{what} declares {expected} bytes but its external data "
                             f"entry says {length}", where=tensor.name,
                             hint="the external data file and the model do not match")
    if files is not None:
        source = _uploaded_file(files, location, what)
    else:
        source = MappedFile.open(_existing_path(location, base_dir, what))
    if offset < 0 or offset + length > source.size:
        raise ModelLoadError(f"{what} reads bytes {offset}..{offset + length} of "
                             f"{location!r}, which has only {source.size}",
                             where=tensor.name, hint="the external data file is truncated")
    return StoredTensor(tensor.name, tensor.data_type, tuple(tensor.dims), source, offset,
                        length)


def load_external_data(tensors: Iterable[tuple[TensorProto, str]], base_dir: str | None,
                       files: dict[str, bytes] | None = None) -> None:
    """Read external tensors into their protos (tensors held by attributes or control-flow
    bodies, which the IR keeps as protos; and an upload's data, embedded into its model)."""
    for tensor, what in tensors:
        if tensor.data_location != TensorProto.EXTERNAL:
            continue
        stored = external_tensor(tensor, what, base_dir, files)
        tensor.raw_data = bytes(stored.source.buffer(stored.offset, stored.nbytes))
        tensor.data_location = TensorProto.DEFAULT
        del tensor.external_data[:]


def _number(text: str | None, key: str, what: str, name: str) -> int:
    try:
        return int(text or 0)
    except ValueError:
        raise ModelLoadError(f"{what} has an external data {key} {text!r}, not a number",
                             where=name, hint="the model file is corrupt") from None


def has_external_data(model: onnx.ModelProto) -> bool:
    return any(t.data_location == TensorProto.EXTERNAL for t, _ in iter_tensors(model.graph))


def embed_external_data(model: onnx.ModelProto, files: dict[str, bytes]) -> None:
    """Move the data of an uploaded model's companion files (e.g. `model.onnx.data`) into it."""
    load_external_data(iter_tensors(model.graph), None, files)


def _uploaded_file(files: dict[str, bytes], location: str, what: str) -> InMemory:
    data = files.get(location, files.get(os.path.basename(location.replace("\\", "/"))))
    if data is None:
        raise ModelLoadError(f"{what} is stored in {location!r}, which was not uploaded with "
                             f"the model", where=what,
                             hint=f"select the .onnx file and {os.path.basename(location)!r} "
                                  f"together when uploading")
    return InMemory(data)


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
