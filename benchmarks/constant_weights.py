"""A decoder whose weights are Constant nodes: no initializers, no external data.

Hand-built and some exported models keep every weight inside a Constant node's ``value``
attribute, all in the one .onnx file.  The file is made from the external-data decoder of
``decoder_models`` without holding the model in memory: each weight is read from the data
file, written as one Constant node into the graph, and the rest of the graph follows (protobuf
appends a repeated field's entries in the order they come, so the Constant nodes come first,
as a topological order wants).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from benchmarks.decoder_models import (BUILDER_VERSION, DecoderShape, build_decoder,
                                       check_free_disk)
from compiler_core.ir.wire import LENGTH_DELIMITED, MODEL_GRAPH, encode_varint, tag

GRAPH_NODE = 1   # GraphProto.node (onnx.proto)

# 1.38 GB of float16 weights (0.69 B parameters, Llama-3's vocabulary): under protobuf's 2 GiB
# limit, so one file.
LLAMA_CONSTANTS = DecoderShape("llama-0.7b", hidden=2048, layers=7, heads=32, kv_heads=8,
                               intermediate=8192, vocab=128256, tied_embeddings=True)


def cached_constant_decoder(shape: DecoderShape, cache_dir: str | os.PathLike) -> Path:
    """The decoder as one .onnx file with Constant-node weights in ``cache_dir``, built first
    when missing (it needs twice its size of free disk while it is made)."""
    path = Path(cache_dir) / f"{shape.name}-constants-v{BUILDER_VERSION}.onnx"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    check_free_disk(f"{shape.name} with Constant weights", shape.weight_bytes() * 2.1,
                    path.parent)
    with tempfile.TemporaryDirectory(dir=path.parent) as folder:
        external = Path(folder) / "model.onnx"
        build_decoder(shape, external)
        partial = path.with_name(path.name + ".partial")
        write_with_constant_weights(external, partial)
        partial.rename(path)    # a build cut short never looks finished
    return path


def write_with_constant_weights(source: Path, target: Path) -> None:
    """``source`` (weights in external data) written to ``target`` as a single file whose
    external weights are Constant nodes, one weight in memory at a time."""
    model = onnx.load(str(source), load_external_data=False)
    graph = model.graph
    moved = [t for t in graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    kept = [t for t in graph.initializer if t.data_location != onnx.TensorProto.EXTERNAL]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    rest = graph.SerializeToString()
    model.ClearField("graph")
    with tempfile.TemporaryFile(dir=target.parent) as nodes:
        for tensor in moved:
            node = helper.make_node("Constant", [], [tensor.name], name=f"{tensor.name}/Constant",
                                    value=numpy_helper.from_array(_read(tensor, source.parent),
                                                                  tensor.name))
            nodes.write(_field(GRAPH_NODE, node.SerializeToString()))
        size = nodes.tell()
        nodes.seek(0)
        with open(target, "wb") as out:
            out.write(model.SerializeToString())
            out.write(tag(MODEL_GRAPH, LENGTH_DELIMITED) + encode_varint(size + len(rest)))
            shutil.copyfileobj(nodes, out, 64 << 20)
            out.write(rest)


def _read(tensor: onnx.TensorProto, folder: Path) -> np.ndarray:
    info = {entry.key: entry.value for entry in tensor.external_data}
    dtype = helper.tensor_dtype_to_np_dtype(tensor.data_type)
    with open(folder / info["location"], "rb") as handle:
        handle.seek(int(info.get("offset", 0)))
        data = handle.read(int(info["length"]))
    return np.frombuffer(data, dtype).reshape(tuple(tensor.dims))


def _field(number: int, payload: bytes) -> bytes:
    return tag(number, LENGTH_DELIMITED) + encode_varint(len(payload)) + payload
