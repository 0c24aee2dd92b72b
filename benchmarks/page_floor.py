"""What a first render costs before GraphLab does anything: a page with the libraries the pass
debugger loads (Dash's renderer, its core and HTML components, the graph component with the same
bundle) and two graph panes of a short labelled chain, no callback at all.  Timed as the journeys
time GraphLab's first render (`journeys.timed_journey`): on the page's own clock, from the start
of its load to the panes drawn and painted, ``browsers`` cold browsers at once.  No page built on
these libraries renders first faster on this machine, so it is the floor the journeys' figure
stands on.

    python benchmarks/page_floor.py [--browsers 3] [--runs 2]

(`python benchmarks/app.py --journeys` prints it beside the journeys.)
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # runs from a plain checkout

NODES = 40   # per pane: a chain of labelled nodes, as a small model's collapsed graph

# Waits in the page (as the journeys' waits do: `journeys.WAIT_IN_PAGE`) until both panes hold
# their nodes, then one paint; answers the milliseconds since the page began to load, or null
# after arguments[0] ms.
DRAWN = """
var done = arguments[arguments.length - 1], end = performance.now() + arguments[0];
(function look() {
  var cys = ["a", "b"].map(function (id) { var e = document.getElementById(id);
                                           return e && e._cyreg && e._cyreg.cy; });
  if (cys[0] && cys[1] && cys[0].nodes().length >= %d && cys[1].nodes().length >= %d) {
    requestAnimationFrame(function () { setTimeout(function () { done(performance.now()); }, 0); });
    return;
  }
  if (performance.now() > end) { done(null); return; }
  setTimeout(look, 10);
})();
""" % (NODES, NODES)


def floor_app():
    """The page: the libraries GraphLab's page loads (the graph component's default bundle,
    the regenerator runtime in Dash's polyfill's place), two panes, no callback."""
    import dash_cytoscape as cyto
    from dash import dcc, html

    from graphlab.app.page_scripts import GraphLabDash
    from graphlab.data_dirs import assets_dir

    elements = [{"data": {"id": f"n{i}", "label": f"node {i}: MatMul"},
                 "position": {"x": 0, "y": 70 * i}} for i in range(NODES)]
    elements += [{"data": {"id": f"e{i}", "source": f"n{i}", "target": f"n{i + 1}"}}
                 for i in range(NODES - 1)]
    app = GraphLabDash(__name__, assets_folder=assets_dir(),
                       assets_ignore=".*")   # served (the runtime), not loaded by the page
    app.layout = html.Div([
        dcc.Dropdown(["model a", "model b"], "model a"),
        *[cyto.Cytoscape(id=pane, elements=elements, layout={"name": "preset"},
                         style={"width": "45vw", "height": "80vh", "display": "inline-block"})
          for pane in ("a", "b")]])
    return app


def serve(port: int) -> None:
    from werkzeug.serving import make_server

    make_server("127.0.0.1", port, floor_app().server, threaded=True).serve_forever()


def first_render(url: str) -> float:
    """Seconds from the start of the page's load to both panes drawn and painted, in a cold
    browser."""
    from benchmarks.journeys import chromium

    driver = chromium()
    try:
        driver.get("about:blank")
        driver.get(url)
        drawn = driver.execute_async_script(DRAWN, 55_000)
        if drawn is None:
            raise AssertionError("the floor page never drew its panes")
        return drawn / 1000
    finally:
        driver.quit()


def floor_times(browsers: int, runs: int) -> list[float]:
    """First renders of the floor page, ``browsers`` at once, ``runs`` times."""
    from benchmarks.load import free_port, wait_for_server

    port = free_port()
    folder = tempfile.mkdtemp(prefix="graphlab-floor-")
    with open(Path(folder) / "server.log", "w") as log:   # what `wait_for_server` shows if it dies
        server = subprocess.Popen([sys.executable, __file__, "--serve", str(port)],
                                  stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_server(server, url, folder)
        times: list[float] = []
        for _ in range(runs):
            with ThreadPoolExecutor(browsers) as pool:
                times += pool.map(lambda _: first_render(url), range(browsers))
        return times
    finally:
        server.terminate()
        server.wait(30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--browsers", type=int, default=3)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)   # the server's child
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return 0
    times = floor_times(args.browsers, args.runs)
    print(f"floor: first render of a page with the same libraries and two {NODES}-node panes, "
          f"{args.browsers} browsers at once: p50 {statistics.median(times):.2f} s, "
          f"max {max(times):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
