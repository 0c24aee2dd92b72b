"""`graphlab.show(...)`: the pass debugger inline in Jupyter, and the static report in the same
output for whenever no server answers.

The app is the one `graphlab serve` runs, started in the kernel by Dash's notebook support
(``app.run(jupyter_mode="_none")``: a server thread in the kernel); its first view is the
model, pipeline, bindings and target asked for (``AppConfig.first_view``), built before the
page opens.

A notebook outlives its kernel: exported to HTML, re-opened next week, shown on a website, an
iframe pointing at the kernel's ``http://127.0.0.1:PORT/`` is a grey box.  So the output
carries the self-contained report of `graphlab report` itself (in an iframe of its own, so its
styles stay out of the notebook), shown by default, and a small script asks the app's server
whether it is there — the server of *this* output, named by a token.  Only when it answers
does the script put the live app in front (the report stays in the output, hidden).  Without
scripts (an untrusted notebook, a static renderer) or without the server, the report is what
one sees; a line above it says which of the two is shown.  Where no server can run in the
kernel (Pyodide/JupyterLite, or ``mode="report"``) the output is the report alone.
"""

from __future__ import annotations

import html
import json
import os
import socket
import sys
import tempfile
import uuid
from urllib.parse import urlencode

from compiler_core.errors import GraphLabError
from compiler_core.hardware.targets import get_target
from compiler_core.ir import save_model

from .models import ModelLike, read_model

MODES = ("auto", "app", "report")
NOT_VERIFIED = "not run for the notebook (graphlab.compile(..., verify=True) checks every pass)"
ALIVE_ROUTE = "_graphlab_show"   # the app's answer to "are you this output's server?"
FRAME_STYLE = "width: 100%; height: {height}px; border: 1px solid #d9e2ec"
CAPTION_STYLE = "font: 13px/1.4 sans-serif; color: #52606d; margin: 4px 0"


def server_possible() -> bool:
    """Can this kernel run the app's server?  Not in a browser-only Python (Pyodide)."""
    return sys.platform != "emscripten"


def report_document(result) -> str:
    """The self-contained report of a CompileResult (one HTML document)."""
    from ..report import render, tell

    return render(tell(result.compilation, result.model, get_target(result.target),
                       NOT_VERIFIED))


def workspace_report(workspace, target: str) -> str:
    from ..report import render, tell

    return render(tell(workspace.compilation, workspace.label, get_target(target),
                       NOT_VERIFIED))


def report_frame(document: str, height: int) -> str:
    """The report in an iframe of its own, so its styles stay out of the notebook."""
    return (f'<iframe class="graphlab-report" srcdoc="{html.escape(document, quote=True)}" '
            f'style="{FRAME_STYLE.format(height=int(height))}"></iframe>')


def report_output(document: str, height: int = 800, why: str = "") -> dict:
    """The output of a report-only show(): a caption and the report."""
    because = f" ({why})" if why else ""
    caption = (f"<b>GraphLab</b>: the static report{because}. It needs no server; "
               f"<code>graphlab serve</code> opens the live app.")
    return {"text/html": f'<div class="graphlab-show"><p style="{CAPTION_STYLE}">{caption}</p>'
                         f"{report_frame(document, height)}</div>",
            "text/plain": f"GraphLab: the static report{because}."}


def inline_report(result, height: int = 800):
    """The self-contained report of a CompileResult, in an iframe (IPython.display.HTML)."""
    from IPython.display import HTML

    return HTML(f"<div>{report_frame(report_document(result), height)}</div>")


def live_output(url: str, token: str, document: str, height: int = 800,
                scope: str = "") -> dict:
    """The output of show() with a server: the report, shown until the script finds this
    output's server at ``url`` (its ALIVE_ROUTE answers ``token``), then the live app in
    front of it.  Every state says in its caption which of the two is shown."""
    element = f"graphlab-show-{token}"
    link = f'<a href="{html.escape(url)}" target="_blank">{html.escape(url)}</a>'
    static = (f"<b>GraphLab</b>: the static report{scope}, kept in this output — the live "
              f"app's server (in the kernel that ran this cell, at {link}) does not answer "
              f"here, or this page runs no scripts.")
    live = (f"<b>GraphLab</b>: the live app, served by this notebook's kernel at {link}. "
            f"The static report is kept in this output for when the kernel is gone.")
    script = f"""(function () {{
  var root = document.getElementById({json.dumps(element)});
  if (!root || !window.fetch) {{ return; }}
  fetch({json.dumps(url + ALIVE_ROUTE)}, {{cache: "no-store"}})
    .then(function (answer) {{ return answer.json(); }})
    .then(function (said) {{
      if (!said || said.token !== {json.dumps(token)}) {{ return; }}
      var app = document.createElement("iframe");
      app.className = "graphlab-app";
      app.src = {json.dumps(url)};
      app.setAttribute("style", {json.dumps(FRAME_STYLE.format(height=int(height)))});
      var report = root.querySelector(".graphlab-report");
      report.style.display = "none";
      root.insertBefore(app, report);
      root.querySelector(".graphlab-caption").innerHTML = {json.dumps(live)};
      root.setAttribute("data-showing", "app");
    }})
    .catch(function () {{}});
}})();"""
    body = (f'<div class="graphlab-show" id="{element}" data-showing="report" '
            f'data-app-url="{html.escape(url)}">'
            f'<p class="graphlab-caption" style="{CAPTION_STYLE}">{static}</p>'
            f"{report_frame(document, height)}<script>{script}</script></div>")
    return {"text/html": body,
            "text/plain": f"GraphLab: the live app at {url} while the kernel that ran this "
                          f"cell runs; the HTML output also holds the static report{scope}."}


def start_app(model: ModelLike, first_view: str, height: int) -> dict:
    """The app's server on a free port in this kernel: its URL, the token its ALIVE_ROUTE
    answers, and the workspace of its first view (built here: the page opens at once)."""
    from ..app import AppConfig, create_app
    from ..app.services import Services

    cache_dir = tempfile.mkdtemp(prefix="graphlab-notebook-")
    config = AppConfig(cache_dir=cache_dir, first_view=first_view, **_model_config(model,
                                                                                   cache_dir))
    services = Services.from_config(config)
    workspace = services.workspace(services.default_state, None)
    app, token, port = create_app(config), uuid.uuid4().hex, _free_port()
    add_alive_route(app.server, token)
    if in_colab():   # Colab reaches the kernel's port only through its own proxy iframe
        app.run(jupyter_mode="inline", jupyter_height=height, port=port)
    else:
        app.run(jupyter_mode="_none", port=port)
    return {"url": _app_url(app, port), "token": token, "workspace": workspace}


def add_alive_route(server, token: str) -> None:
    """ALIVE_ROUTE on the app's Flask server: answers ``token``, to any page (the notebook's
    page is another origin than the kernel's port)."""
    def alive():
        answer = server.response_class(json.dumps({"token": token}),
                                       mimetype="application/json")
        answer.headers["Access-Control-Allow-Origin"] = "*"
        answer.headers["Cache-Control"] = "no-store"
        return answer

    server.add_url_rule(f"/{ALIVE_ROUTE}", ALIVE_ROUTE, alive)


def _app_url(app, port: int) -> str:
    """Where the notebook's browser finds the app: Dash's own rule (a Jupyter server proxy's
    address and path when Dash learnt them from the notebook, else the kernel's port)."""
    try:
        from dash._jupyter import _jupyter_config
    except ImportError:
        _jupyter_config = {}
    server = str(_jupyter_config.get("server_url") or f"http://127.0.0.1:{port}").rstrip("/")
    prefix = app.config.get("requests_pathname_prefix") or "/"
    return server + prefix


def in_colab() -> bool:
    return "google.colab" in sys.modules


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


def first_view(pipeline: str, sizes: dict[str, int], target: str, versus: str | None,
                both_after: bool) -> str:
    fields = {"pipeline": pipeline, "target": target,
              "bind": ",".join(f"{k}={v}" for k, v in sizes.items()),
              "vs": versus or "", "vsout": "1" if both_after else ""}
    return "?" + urlencode({k: v for k, v in fields.items() if v})


def typed_sizes(bindings) -> dict[str, int]:
    from ..user_input import parse_bindings

    return parse_bindings(bindings) if isinstance(bindings, str) else dict(bindings or {})


def notebook_display():
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
