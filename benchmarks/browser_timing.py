"""The pass debugger timed in headless Chromium: first render, each "Next ▶" step, groups.

A step is timed from the click to the page being idle with the new pass drawn: both panes'
titles name the new pass, the Dash renderer has no callback in flight, and the browser has
painted a frame since.  The bytes are what the server answered (the bodies of the callback
responses, from the browser's resource timings), so a step that re-sends nothing shows it.

Used by `benchmarks/app.py` and by the browser rows of `benchmarks/scale.py`.
"""

from __future__ import annotations

import logging
import os
import statistics
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from graphlab.app import AppConfig, create_app

DRAWN = ("var p = window.graphlabPanes; return !!p && p.before.elements().length > 0 "
         "&& p.after.elements().length > 0;")
# No callback in flight (the renderer's own bookkeeping, as dash.testing reads it).
IDLE = ("var s = window.store && window.store.getState(); if (!s) { return false; }"
        "var c = Object.assign({}, s.callbacks); delete c.stored; delete c.completed;"
        "return Object.values(c).every(function (l) { return !l.length; });")
# Resolves after the next painted frame: the main thread was free to draw.
PAINTED = ("var done = arguments[arguments.length - 1];"
           "requestAnimationFrame(function () { setTimeout(function () { done(true); }, 0); });")
ANSWERS = ("var found = performance.getEntriesByType('resource').filter(function (e) {"
           "  return e.name.indexOf('_dash-update-component') >= 0; });"
           "performance.clearResourceTimings();"
           "return [found.length, found.reduce(function (s, e) { return s + e.decodedBodySize; }, 0)];")
TITLE = "return document.getElementById('pane-after-title').textContent;"
AT_LAST = ("var rows = document.querySelectorAll('.pass-row');"
           "return rows.length > 0 && rows[rows.length - 1].classList.contains('selected');")


@dataclass
class Step:
    """One "Next ▶": seconds to the page idle with the pass drawn, the server's answers."""

    title: str
    seconds: float
    requests: int
    bytes: int


@dataclass
class BrowserFigures:
    first_render: list[float] = field(default_factory=list)   # one per page load
    steps: list[Step] = field(default_factory=list)


@contextmanager
def browser_on(path: str, cache_dir: str | None = None):
    """(driver, url): the app serving the model at ``path``, and headless Chromium.  A
    ``cache_dir`` kept between runs keeps the built workspaces too."""
    from selenium import webdriver
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    app = create_app(AppConfig(extra_model_path=path, cache_dir=cache_dir
                               or tempfile.mkdtemp(prefix="graphlab-bench-")))
    server = make_server("127.0.0.1", 0, app.server, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--window-size=1600,900"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options)
    driver.set_script_timeout(120)
    try:
        yield driver, f"http://127.0.0.1:{server.server_port}/"
    finally:
        driver.quit()
        server.shutdown()


def wait_idle(driver, timeout: float = 120.0, extra=None) -> None:
    """Until the panes are drawn, no callback is in flight (and ``extra()`` holds), then one
    painted frame."""
    from selenium.webdriver.support.ui import WebDriverWait

    def ready(d) -> bool:
        return bool(d.execute_script(DRAWN) and d.execute_script(IDLE)
                    and (extra is None or extra()))

    WebDriverWait(driver, timeout, poll_frequency=0.02).until(ready)
    driver.execute_async_script(PAINTED)


def open_page(driver, url: str, build_timeout: float = 1800.0) -> None:
    """Load the page once, waiting for the model's build however long it takes."""
    driver.get(url)
    wait_idle(driver, build_timeout)


def first_render(driver, url: str) -> float:
    """Seconds from navigation to the page idle with both panes drawn (the workspace built)."""
    driver.get("about:blank")
    start = time.perf_counter()
    driver.get(url)
    wait_idle(driver)
    return time.perf_counter() - start


def step_through(driver, count: int) -> list[Step]:
    """Press "Next ▶" up to ``count`` times (fewer at the last pass)."""
    steps: list[Step] = []
    driver.execute_script(ANSWERS)   # forget the answers so far
    for _ in range(count):
        if driver.execute_script(AT_LAST):
            break
        before = driver.execute_script(TITLE)
        button = driver.find_element("id", "step-next")
        start = time.perf_counter()
        button.click()
        wait_idle(driver, extra=lambda: driver.execute_script(TITLE) != before)
        seconds = time.perf_counter() - start
        requests, sent = driver.execute_script(ANSWERS)
        steps.append(Step(driver.execute_script(TITLE), seconds, requests, sent))
    return steps


def measure(path: str, *, loads: int = 3, steps: int = 12, cache_dir: str | None = None,
            url_query: str = "") -> BrowserFigures:
    """First render ``loads`` times, then ``steps`` steps from the first view."""
    figures = BrowserFigures()
    with browser_on(path, cache_dir) as (driver, url):
        url += url_query
        open_page(driver, url)
        for _ in range(loads):
            figures.first_render.append(first_render(driver, url))
        figures.steps = step_through(driver, steps)
    return figures


@dataclass
class Walks:
    """Medians over several page loads and walks through the passes: what the goals read."""

    first_render: float        # seconds, median
    step_median: float
    step_max: float
    bytes_median: float       # the server's answers per step
    bytes_max: float
    loads: list[float]
    steps: int
    load_average: str          # the machine's, when measured

    def summary(self) -> str:
        return (f"first render median {self.first_render:.2f} s (of {len(self.loads)}: "
                f"{', '.join(f'{x:.2f}' for x in self.loads)}); {self.steps} steps: median "
                f"{self.step_median:.2f} s, max {self.step_max:.2f} s; answers per step "
                f"median {self.bytes_median / 1e3:.1f} kB, max {self.bytes_max / 1e3:.1f} kB "
                f"(load average {self.load_average})")


def walks(path: str, runs: int = 3, steps: int = 40, cache_dir: str | None = None,
          url_query: str = "?pass=1") -> Walks:
    """``runs`` times: a fresh browser and page (the workspace built once, before the first),
    its first render, then up to ``steps`` "Next ▶" presses from the first pass."""
    loads, seconds, sent = [], [], []
    for _ in range(runs):
        figures = measure(path, loads=1, steps=steps, cache_dir=cache_dir, url_query=url_query)
        loads += figures.first_render
        seconds += [s.seconds for s in figures.steps]
        sent += [s.bytes for s in figures.steps]
    return Walks(statistics.median(loads), statistics.median(seconds), max(seconds),
                 statistics.median(sent), max(sent), loads, len(seconds), load_average())


def load_average() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def grouping(driver) -> dict[str, float]:
    """Seconds from a tap on a collapsed group to both panes redrawn: open one, open a group
    inside it, close that again; then "Open all groups" until nothing is collapsed."""
    from selenium.webdriver.support.ui import WebDriverWait

    def js(script: str, *args):
        return driver.execute_script("var p = window.graphlabPanes, before = p.before, "
                                     "after = p.after;" + script, *args)

    def until(condition) -> float:
        start = time.perf_counter()
        WebDriverWait(driver, 300, poll_frequency=0.05).until(lambda _: condition())
        return time.perf_counter() - start

    def toggle(group: str, opening: bool) -> float:
        js("before.getElementById(arguments[0]).emit('tap');", group)
        return until(lambda: js("return before.getElementById(arguments[0]).hasClass('group') "
                                "=== arguments[1] && after.getElementById(arguments[0])"
                                ".hasClass('group') === arguments[1];", group, opening))

    outer = js("return before.nodes('.collapsed')[0].id();")
    figures = {"open a group": toggle(outer, True)}
    inner = js("var frame = arguments[0], inside = before.nodes('.collapsed').filter("
               "function (n) { return n.data('within') === frame; });"
               "return inside.length ? inside[0].id() : null;", outer)
    if inner:
        figures["open a group inside it"] = toggle(inner, True)
        figures["close that again"] = toggle(inner, False)
    driver.find_element("id", "groups-expand").click()
    figures["open all groups"] = until(lambda: js(
        "return before.nodes('.collapsed').length + after.nodes('.collapsed').length === 0 "
        "&& before.nodes('.op').length > 0;"))
    return figures
