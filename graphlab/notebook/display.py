"""`graphlab.show(...)`: the pass debugger inline in Jupyter, or the report where no server can run.

The app is the one `graphlab serve` runs, started by Dash's own notebook mode
(``app.run(jupyter_mode="inline")``: a server thread in the kernel, the page in an iframe of
the cell's output).  Its first view is the model, pipeline, bindings and target asked for
(``AppConfig.first_view``), built before the page opens.  Where no server can run in the kernel
(Pyodide/JupyterLite, or ``mode="report"``), the cell shows the self-contained HTML report of
`graphlab report` in an iframe of its own, so its styles stay out of the notebook.
"""

from __future__ import annotations

import html
import os
import socket
import sys
import tempfile
from urllib.parse import urlencode

from compiler_core.errors import GraphLabError
from compiler_core.hardware.targets import DEFAULT_TARGET, get_target
from compiler_core.ir import save_model

from .models import ModelLike, read_model

MODES = ("auto", "app", "report")
NOT_VERIFIED = "not run for the notebook (graphlab.compile(..., verify=True) checks every pass)"


def show(model: ModelLike, pipeline: str = "O2", bindings: dict[str, int] | str | None = None,
         target: str | None = None, *, versus: str | None = None, both_after: bool = False,
         mode: str = "auto", height: int = 800) -> None:
    """Show the pass debugger on ``model`` inline (a CompileResult brings its own pipeline,
    bindings and target).  ``versus``: compare with a sample, or with onnxruntime's optimized
    model ("onnxruntime:extended"); ``both_after``: compare the pipeline's outputs.  ``mode``:
    "app" (the live app), "report" (the static report), "auto" (the app where a server can
    run, else the report)."""
    from .result import CompileResult, compile

    if mode not in MODES:
        raise GraphLabError(f"unknown mode {mode!r}", hint=f"modes: {', '.join(MODES)}")
    display = _notebook_display()
    result = model if isinstance(model, CompileResult) else None
    if result is not None:
        model, pipeline, bindings, target = (result.source or result.initial, result.pipeline,
                                             result.bindings, result.target)
    sizes = _sizes(bindings)
    target = target or DEFAULT_TARGET
    get_target(target)
    if mode == "report" or (mode == "auto" and not server_possible()):
        display(inline_report(result or compile(model, pipeline, sizes, target), height))
        return
    _run_app(model, _first_view(pipeline, sizes, target, versus, both_after), height)


def server_possible() -> bool:
    """Can this kernel run the app's server?  Not in a browser-only Python (Pyodide)."""
    return sys.platform != "emscripten"


def inline_report(result, height: int = 800):
    """The self-contained report of a CompileResult, in an iframe (IPython.display.HTML)."""
    from IPython.display import HTML

    from ..report import render, tell

    document = render(tell(result.result, result.model, result.pipeline,
                           get_target(result.target), result.sizes, NOT_VERIFIED))
    return HTML(f'<div><iframe srcdoc="{html.escape(document, quote=True)}" '
                f'style="width: 100%; height: {int(height)}px; border: 1px solid #d9e2ec">'
                f"</iframe></div>")


def _run_app(model: ModelLike, first_view: str, height: int) -> None:
    from ..app import AppConfig, create_app
    from ..app.services import Services

    cache_dir = tempfile.mkdtemp(prefix="graphlab-notebook-")
    config = AppConfig(cache_dir=cache_dir, first_view=first_view, **_model_config(model,
                                                                                   cache_dir))
    services = Services.from_config(config)
    services.workspace(services.default_state, None)   # built here: the page opens at once
    create_app(config).run(jupyter_mode="inline", jupyter_height=height, port=_free_port())


def _model_config(model: ModelLike, folder: str) -> dict:
    """How the app names the model: a sample by name, a file by its path, anything else
    written to a file first."""
    read = read_model(model)
    if read.sample is not None:
        return {"default_model": read.sample}
    if read.path is not None:
        return {"extra_model_path": os.path.abspath(read.path)}
    path = os.path.join(folder, f"{_file_stem(read.label)}.onnx")
    save_model(read.graph, path)
    return {"extra_model_path": path}


def _first_view(pipeline: str, sizes: dict[str, int], target: str, versus: str | None,
                both_after: bool) -> str:
    fields = {"pipeline": pipeline, "target": target,
              "bind": ",".join(f"{k}={v}" for k, v in sizes.items()),
              "vs": versus or "", "vsout": "1" if both_after else ""}
    return "?" + urlencode({k: v for k, v in fields.items() if v})


def _sizes(bindings) -> dict[str, int]:
    from ..user_input import parse_bindings

    return parse_bindings(bindings) if isinstance(bindings, str) else dict(bindings or {})


def _notebook_display():
    """IPython's display, inside a notebook kernel; outside one there is nowhere to draw."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        get_ipython = None
    shell = get_ipython() if get_ipython else None
    if shell is None or type(shell).__name__ == "TerminalInteractiveShell":
        raise GraphLabError("graphlab.show draws inside a Jupyter notebook",
                            hint="from a terminal: `graphlab serve --model MODEL` opens the "
                                 "app, `graphlab report MODEL` writes the report")
    return display


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _file_stem(label: str) -> str:
    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in label).strip("._")
    return stem or "model"
