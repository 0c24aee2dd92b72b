"""The diff of any two models: nodes matched across graphs that share no ids, and what differs.

    from compiler_core.model_diff import diff_models
    diff = diff_models(load_model("a.onnx"), load_model("b.onnx"), "a", "b")
    diff.by_op(), diff.changed_pairs, diff.only_a, diff.only_b, to_json(diff)

``fingerprints`` computes content keys (labels, neighbourhoods), ``align`` matches nodes,
``compare`` finds the differences of matched pairs, ``records`` holds the result and
``side_by_side`` puts B into A's ids for views made for pass diffs.  ``to_json`` is
``compiler_core.records``'.
"""

from .compare import diff_models
from .records import KINDS, Change, DiffNode, ModelDiff, NodePair, OpCount
from .side_by_side import b_in_a_ids

__all__ = ["KINDS", "Change", "DiffNode", "ModelDiff", "NodePair", "OpCount", "b_in_a_ids",
           "diff_models"]
