"""The size limit of an ONNX file, so that GraphLab never writes one nothing can read.

An .onnx file is one protobuf message, and protobuf refuses to parse a message of 2 GiB or
more: onnxruntime reports INVALID_PROTOBUF, onnx "wire format was corrupt".  Models past it
keep their weights in an external data file beside the .onnx (``model_file.save_model``).
"""

from __future__ import annotations

import numpy as np

from ..errors import GraphLabError
from .graph import Graph

PROTOBUF_LIMIT = (1 << 31) - 1  # bytes in one protobuf message, the most any reader parses


class ModelTooLargeError(GraphLabError):
    """Writing the model as asked would break a format limit (refused: never written corrupt)."""


def weights_nbytes(graph: Graph) -> int:
    """Bytes of every initializer's data."""
    return sum(np.asarray(value.const).nbytes for value in graph.initializers.values())


def check_fits_in_one_message(graph: Graph, structure_bytes: int = 0) -> None:
    """Refuse a single-message model (bytes, or one .onnx without external data) past the
    limit, naming the sizes and what to do instead."""
    total = weights_nbytes(graph) + structure_bytes
    if total > PROTOBUF_LIMIT:
        raise ModelTooLargeError(
            f"model {graph.name!r} would be {format_size(total)} in one message, over "
            f"protobuf's 2 GiB limit: no ONNX reader could parse it", where=graph.name,
            hint="save it to a file, which puts the weights in an external data file beside "
                 "it (graphlab compile -o OUT.onnx does so by itself)")


def format_size(count: int) -> str:
    """'2.31 GiB', '261 KiB', '512 B'."""
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if count >= 1 << shift:
            return f"{count / (1 << shift):.3g} {unit}"
    return f"{count} B"
