"""GraphLab from Python and in Jupyter: compile a model, compare two, show the pass debugger.

    import graphlab
    result = graphlab.compile("bert_tiny_op13", pipeline="O2")   # representative sizes
    result.snapshots, result.roofline, result.memory, result.to_dict()
    graphlab.diff("bert_tiny_op13", "bert_tiny_dynamo")
    graphlab.edit("teach_conv_bn").delete("relu_side")   # a model, with its edits as data
    result.show()                      # the pass debugger inline (or the report, see `display`)

``models`` reads whatever a user holds (a path, a sample name, bytes, an onnx ModelProto, a
Graph) into a Graph; ``result`` runs the pipeline and keeps the records the CLI's ``--json``
prints; ``display`` renders inline.  `import graphlab` loads none of this until it is used.
"""

from .editing import ModelEditor, edit
from .models import diff
from .result import CompileResult, compile, show

__all__ = ["CompileResult", "ModelEditor", "compile", "diff", "edit", "show"]
