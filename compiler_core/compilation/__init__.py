"""The one way to compile a model: ``compile_model`` decides the sizes, the bindings and the
target (``Decisions``, which it reports), runs the pipeline, and returns the ``Compilation``
every view reads — the CLI, the app's builds, the notebook and the report.  ``sized`` gives a
graph the shapes the decided sizes fix, for the hardware models, which read sized graphs."""

from .compile import VERIFY_IF_RUNNABLE, Compilation, compile_model
from .decisions import Decisions, decide, decide_sizes, result_key
from .sizing import sized

__all__ = ["Compilation", "Decisions", "VERIFY_IF_RUNNABLE", "compile_model", "decide",
           "decide_sizes", "result_key", "sized"]
