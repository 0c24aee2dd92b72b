"""The self-contained HTML report of one pipeline run (`graphlab report`, and the app's
"Download report"): the model, every pass with its diff, pattern matches and near misses, the
roofline before and after, and the memory plan.

    from graphlab.report import run_verified, tell, render
    result, note = run_verified(graph, "O2", {})
    html = render(tell(result, "cnn_bn", "O2", get_target("asic32"), ChosenSizes(), note))

``story`` gathers compiler_core's records (compiler_core itself never renders HTML);
``summary``, ``passes``, ``patterns`` and ``hardware`` turn them into sections; ``charts``
draws inline SVG; ``page`` assembles one file with its stylesheet inlined.
"""

from .page import render
from .story import Story, run_verified, tell

__all__ = ["Story", "render", "run_verified", "tell"]
