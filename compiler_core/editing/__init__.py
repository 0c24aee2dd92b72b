"""Editing a model where the debugger shows the problem: edits as data (JSON records naming
nodes and values), each checked before it applies, all applied or none, and what an edit
changes in the model's outputs measured in onnxruntime.

    from compiler_core.editing import apply_edits, read_edits_text
    edited = apply_edits("model.onnx", [{"edit": "bypass", "node": "relu_side"}])
    edited.graph, edited.model, to_json(edited)
"""

from .apply import EDITS_METADATA_KEY, EditedModel, apply_edits, read_model_proto
from .records import (KINDS, MAX_EDITS, MAX_EDITS_JSON_BYTES, MAX_TENSOR_VALUES, Bypass,
                      Delete, Edit, Insert, Rename, Rewire, SetAttribute, SetTensor,
                      edit_from_json, edits_from_json, edits_to_json, read_edits_text)

__all__ = [
    "EDITS_METADATA_KEY", "KINDS", "MAX_EDITS", "MAX_EDITS_JSON_BYTES", "MAX_TENSOR_VALUES",
    "Bypass", "Delete", "Edit", "EditedModel", "Insert", "Rename", "Rewire", "SetAttribute",
    "SetTensor", "apply_edits", "edit_from_json", "edits_from_json", "edits_to_json",
    "read_edits_text", "read_model_proto",
]
