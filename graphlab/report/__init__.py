"""The self-contained HTML report of one pipeline run (`graphlab report`, and the app's
"Download report"): the model, every pass with its diff, pattern matches and near misses, the
roofline before and after, and the memory plan.

    from compiler_core.compilation import VERIFY_IF_RUNNABLE, compile_model
    from graphlab.report import tell, render
    html = render(tell(compile_model(graph, "O2", verify=VERIFY_IF_RUNNABLE), "cnn_bn"))

``story`` gathers compiler_core's records (compiler_core itself never renders HTML);
``summary``, ``passes``, ``patterns`` and ``hardware`` turn them into sections; ``charts``
draws inline SVG; ``page`` assembles one file with its stylesheet inlined.
"""

from .page import render
from .story import Story, tell

__all__ = ["Story", "render", "tell"]
