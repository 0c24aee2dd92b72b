"""What a browser uploads: one .onnx file, or the .onnx file with its external data files.

Exporters write big models as `model.onnx` plus `model.onnx.data` (external data).  Both are
selected together in the file dialog; the data is moved into the model here, so the rest of
the app handles one self-contained model, like a single-file upload.
"""

from __future__ import annotations

import base64
import binascii

from compiler_core.errors import GraphLabError
from compiler_core.ir.external_data import embed_external_data, has_external_data
from compiler_core.ir.importer import parse_model_bytes


def read_upload(contents: str | list[str], filenames: str | list[str] | None,
                limit: int) -> tuple[str, bytes]:
    """(the model's file name, its self-contained bytes) from dcc.Upload's props."""
    contents = [contents] if isinstance(contents, str) else list(contents)
    names = [filenames] if isinstance(filenames, str) else list(filenames or [])
    names += [f"upload{i}.onnx" for i in range(len(names), len(contents))]
    files, total = {}, 0
    for name, content in zip(names, contents):
        files[name] = decode_upload(content, name, limit - total)
        total += len(files[name])
    model_name = _model_file(list(files))
    data = files.pop(model_name)
    model = parse_model_bytes(data, model_name)
    if not has_external_data(model):
        return model_name, data
    embed_external_data(model, files)
    try:
        return model_name, model.SerializeToString()
    except ValueError as err:  # protobuf cannot hold more than 2 GB in one message
        raise GraphLabError(f"{model_name} with its data is too large for one ONNX file",
                            hint="start `graphlab serve --model FILE` to open it from disk"
                            ) from err


def _model_file(names: list[str]) -> str:
    models = [n for n in names if n.lower().endswith(".onnx")]
    if len(names) == 1:
        return names[0]
    if len(models) != 1:
        raise GraphLabError(f"cannot tell which of {', '.join(names)} is the model",
                            hint="upload one .onnx file, with its external data files if it "
                                 "has any")
    return models[0]


def decode_upload(contents: str, filename: str, limit: int) -> bytes:
    """The bytes of a dcc.Upload data URL, with the size limit enforced."""
    _, _, payload = contents.partition(",")
    if len(payload) * 3 // 4 > limit + 3:
        raise GraphLabError(f"{filename} is larger than the {limit >> 20} MB upload limit",
                            hint="start `graphlab serve --model FILE` to open a bigger model")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as err:
        raise GraphLabError(f"{filename} did not arrive intact", hint="upload it again") from err
    if not data:
        raise GraphLabError(f"{filename} is empty")
    return data
