"""GraphLab's IR: SSA values, nodes with stable ids, graphs; ONNX import/export; printing."""

from .exporter import to_bytes, to_model_proto
from .graph import Graph, ModelInfo
from .importer import from_proto, load_model
from .model_file import SavedModel, model_for_runtime, save_model
from .node import Node, Provenance
from .proto_types import FUSED_DOMAIN
from .printer import format_graph, format_node
from .shape_inference import infer_shapes
from .value import Value

__all__ = [
    "FUSED_DOMAIN", "Graph", "ModelInfo", "Node", "Provenance", "SavedModel", "Value", "format_graph",
    "format_node", "from_proto", "infer_shapes", "load_model", "model_for_runtime", "save_model",
    "to_bytes",
    "to_model_proto",
]
