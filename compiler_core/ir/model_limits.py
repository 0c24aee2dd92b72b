"""The size limit of an ONNX file, so that GraphLab never writes one nothing can read.

An .onnx file is one protobuf message, and protobuf refuses to parse a message of 2 GiB or
more: onnxruntime reports INVALID_PROTOBUF, onnx "wire format was corrupt".  Models past it
keep their weights in an external data file beside the .onnx (``model_file.save_model``).
"""

from __future__ import annotations

from ..errors import GraphLabError
from .graph import Graph

PROTOBUF_LIMIT = (1 << 31) - 1  # bytes in one protobuf message, the most any reader parses


class ModelTooLargeError(GraphLabError):
    """Writing the model as asked would break a format limit (refused: never written corrupt)."""


def check_fits_in_one_message(graph: Graph, size: int) -> None:
    """Refuse a model of ``size`` bytes as one message (bytes in memory) past the limit,
    naming the size and what to do instead."""
    if size > PROTOBUF_LIMIT:
        raise ModelTooLargeError(
            f"model {graph.name!r} would be {format_size(size)} in one message, over "
            f"protobuf's 2 GiB limit: no ONNX reader could parse it", where=graph.name,
            hint="save it to a file, which puts the weights in an external data file beside "
                 "it (graphlab compile -o OUT.onnx does so by itself)")


def format_size(count: int) -> str:
    """'2.31 GiB', '261 KiB', '512 B'."""
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if count >= 1 << shift:
            return f"{count / (1 << shift):.3g} {unit}"
    return f"{count} B"
