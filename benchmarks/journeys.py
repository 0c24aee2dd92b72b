"""A person at the pass debugger, in a real browser: what they do and what they see.

The journey tests (tests/browser/test_journeys.py) and the app benchmark (benchmarks/app.py)
drive the page through this one class, the way a person does: open the dropdown and choose
an option, upload a file, press Next, click a tab or a near miss.  What they check is what
the person sees: which model each pane draws, whether the changed nodes are inside the
panes' viewports, text cut off by its box, and the browser console's errors.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

# Dash's renderer has no callback in flight and no view waits for its build: none is shown in
# progress, and the navigation's store of the view waiting (`build_progress.PENDING`) is empty
# (a build that has just finished shows no progress until the next poll shows its view).
BUSY = ("var s = window.store && window.store.getState(); if (!s) { return 1; }"
        "var c = Object.assign({}, s.callbacks); delete c.stored; delete c.completed;"
        "var pending = Object.values(c).reduce(function (n, l) { return n + l.length; }, 0);"
        "var progress = document.getElementById('build-progress');"
        "var at = s.paths && s.paths.strs && s.paths.strs['build-pending'], node = s.layout;"
        "(at || []).forEach(function (key) { node = node && node[key]; });"
        "var waiting = at && node && node.props && node.props.data ? 1 : 0;"
        "return pending + waiting + (progress && progress.textContent ? 1 : 0);")

# The page notes when a person's input lands (capture phase, before any handler of the page
# runs); armed again before each click, so a wait counts from the click it follows.
HEAR_INPUT = """
window.graphlabInputAt = null;
if (!window.graphlabHearsInput) {
  window.graphlabHearsInput = true;
  ["pointerdown", "keydown", "change"].forEach(function (kind) {
    document.addEventListener(kind, function () {
      if (window.graphlabInputAt === null) { window.graphlabInputAt = performance.now(); }
    }, true);
  });
}
"""

# A wait inside the page: a look every 10 ms on the page's own timer until the panes hold a
# view other than arguments[0] (when arguments[1]) and nothing is busy (`BUSY`), both for
# arguments[2] ms in a row; then a paint.  It answers the milliseconds from the last input
# the page heard (else from the start of its load) to the start of that quiet, plus the paint
# — what a person waited, without the looks that confirmed it — or null after arguments[3]
# ms.  Looking from outside instead (a WebDriver round trip every 20-50 ms) costs the browser
# and the machine work of its own: with three browsers on two cores, a share of the time it
# measures.
WAIT_IN_PAGE = """
var done = arguments[arguments.length - 1], other = arguments[0], mustChange = arguments[1];
var calm = arguments[2], end = performance.now() + arguments[3];
var busy = new Function(%s), quietSince = null, quietOn = null;
(function look() {
  var now = performance.now(), panes = window.graphlabPanes;
  var shown = panes ? panes.shown() : null;
  var ready = !mustChange || (shown !== null && shown !== undefined && shown !== other);
  var still = ready && busy() === 0;
  if (!still || shown !== quietOn) { quietSince = null; }
  if (still && quietSince === null) { quietSince = now; quietOn = shown; }
  if (quietSince !== null && now - quietSince >= calm) {
    var frame = performance.now();
    requestAnimationFrame(function () { setTimeout(function () {
      var from = window.graphlabInputAt === null || window.graphlabInputAt === undefined
        ? 0 : window.graphlabInputAt;
      done(quietSince + (performance.now() - frame) - from);
    }, 0); });
    return;
  }
  if (now > end) { done(null); return; }
  setTimeout(look, 10);
})();
""" % json.dumps(BUSY)
CALM_MS = 200   # quiet this long is idle: longer than any gap between a callback and the next

# One pane as drawn: its node ids and labels, and how many marked (changed) nodes it holds and
# how many of those lie inside its viewport (the graph component's extent).
PANE = """
var cy = window.graphlabPanes && window.graphlabPanes[arguments[0]];
if (!cy) { return null; }
var e = cy.extent(), mark = /\\b(has-)?(removed|added|modified)\\b/;
var seen = function (n) { var b = n.boundingBox();
  return b.x2 > e.x1 && b.x1 < e.x2 && b.y2 > e.y1 && b.y1 < e.y2; };
var marked = cy.nodes().filter(function (n) { return mark.test(n.classes().join(' ')); });
return {labels: cy.nodes('.op').map(function (n) { return n.data('label'); }).sort().join('|'),
        nodes: cy.nodes().length, marked: marked.length, seen: marked.filter(seen).length,
        zoom: cy.zoom(), width: cy.width(), height: cy.height()};
"""

# Visible elements whose text is wider (or taller) than their box and hidden by it: what a
# person reads as cut off ("Inspecto", "6 remov"), a chart's text included.  Scrolling areas
# are not cut: they scroll.
CUT_OFF = """
var found = [];
document.querySelectorAll('body *').forEach(function (el) {
  if (!el.offsetParent && getComputedStyle(el).position !== 'fixed') { return; }
  if (el.type === 'file') { return; }   // an upload's input is drawn as its button
  var style = getComputedStyle(el);
  if (style.visibility === 'hidden' || style.opacity === '0') { return; }
  if (/(auto|scroll)/.test(style.overflowX + style.overflowY)) { return; }
  var text = (el.innerText || el.placeholder || el.value || '').trim();
  if (!text || el.children.length > 0 && el.innerText === undefined) { return; }
  var wide = el.scrollWidth > el.clientWidth + 1 && style.overflowX !== 'visible';
  var ellipsis = style.textOverflow === 'ellipsis' && el.scrollWidth > el.clientWidth + 1;
  var placeholder = el.placeholder && !el.value && el.tagName === 'INPUT' &&
    measure(el.placeholder, style) > el.clientWidth - 8;
  if (wide || ellipsis || placeholder) {
    found.push((el.id ? '#' + el.id : el.className || el.tagName) + ': ' +
               (placeholder ? el.placeholder : text).slice(0, 60));
  }
});
// a chart's text (titles, labels, legend) drawn past its chart's box: the box clips it
document.querySelectorAll('.js-plotly-plot').forEach(function (plot) {
  var box = plot.getBoundingClientRect();
  if (!plot.offsetParent || box.width === 0) { return; }
  plot.querySelectorAll('svg.main-svg text').forEach(function (t) {
    var text = (t.textContent || '').trim(), r = t.getBoundingClientRect();
    if (text && r.width > 0 && (r.right > box.right + 1 || r.left < box.left - 1)) {
      found.push('chart ' + (plot.parentElement.id || '') + ': ' + text.slice(0, 60));
    }
  });
});
function measure(text, style) {
  var c = measure.c || (measure.c = document.createElement('canvas').getContext('2d'));
  c.font = style.font; return c.measureText(text).width;
}
return found;
"""


@dataclass
class PaneView:
    """What one pane shows."""

    labels: str
    nodes: int
    marked: int
    seen: int
    zoom: float
    width: float
    height: float


class Person:
    """A person at the page, through a selenium driver."""

    def __init__(self, driver, base_url: str):
        self.driver = driver
        self.base_url = base_url.rstrip("/") + "/"

    # -- what they do ------------------------------------------------------------------------
    def open(self, query: str = "") -> None:
        self.driver.get(self.base_url + query)
        self.wait_drawn()

    def options(self, dropdown_id: str = "model-select") -> list[str]:
        """The dropdown's option labels, as the person reads them when it is open."""
        self._click(f"#{dropdown_id}")
        labels = [el.text for el in self._all("[role=option]") if el.text.strip()]
        self._all("body")[0].click()
        return labels

    def choose(self, value: str, dropdown_id: str = "model-select") -> None:
        """Open the dropdown and click the option whose label starts with ``value``."""
        shown = self.shown()
        self._click(f"#{dropdown_id}")
        search = self._all(".dash-dropdown-search")
        if search:   # typed into the list's search box, as a person does with a long list
            search[0].send_keys(value)
            time.sleep(0.2)
        for option in self._all("[role=option]"):
            if option.text.split() and option.text.split()[0] == value:
                self.press(option)
                if dropdown_id == "model-select":
                    self.wait_shown_other_than(shown)
                self.wait_idle()
                return
        raise AssertionError(f"{dropdown_id} has no option {value!r}")

    def clear(self, dropdown_id: str) -> None:
        """The dropdown's clear button (its ×)."""
        self.press(self._all(f"#{dropdown_id} .dash-dropdown-clear")[0])
        self.wait_idle()

    def upload(self, path: str, input_css: str = "#model-upload input[type=file]") -> None:
        shown = self.shown()
        self._all(input_css)[0].send_keys(path)
        self.wait_shown_other_than(shown, timeout=120)

    def next(self) -> None:
        self._click("#step-next")
        self.wait_idle()

    def prev(self) -> None:
        self._click("#step-prev")
        self.wait_idle()

    def open_tab(self, label: str) -> None:
        for tab in self._all(".tab"):
            if tab.text.strip() == label:
                self.press(tab)
                self.wait_idle()
                return
        raise AssertionError(f"no tab {label!r}: {[t.text for t in self._all('.tab')]}")

    def click(self, css: str, index: int = 0) -> None:
        self.press(self._all(css)[index])
        self.wait_idle()

    def back(self) -> None:
        shown = self.shown()
        self.driver.back()
        self.wait_shown_other_than(shown)

    # -- what they see -----------------------------------------------------------------------
    def shown(self) -> str | None:
        """The view (model and pass) both panes hold and were fitted to."""
        return self.driver.execute_script(
            "var p = window.graphlabPanes; return p ? p.shown() : null;")

    def pane(self, side: str) -> PaneView | None:
        found = self.driver.execute_script(PANE, side)
        return PaneView(**found) if found else None

    def text(self, css: str) -> str:
        found = self._all(css)
        return found[0].text if found else ""

    def cut_off(self) -> list[str]:
        return self.driver.execute_script(CUT_OFF)

    def console_errors(self) -> list[str]:
        return [entry["message"] for entry in self.driver.get_log("browser")
                if entry["level"] == "SEVERE" and "favicon" not in entry["message"]]

    def url_query(self) -> str:
        return self.driver.execute_script("return window.location.search;")

    # -- waiting ------------------------------------------------------------------------------
    def wait_idle(self, timeout: float = 60) -> float:
        """Until no callback is in flight nor build under way for a moment, and the browser
        has painted since; returns the seconds the person waited (see `_wait_in_page`)."""
        return self._wait_in_page(None, must_change=False, timeout=timeout)

    def eventually(self, seen, seconds: float = 2.0) -> bool:
        """Whether ``seen()`` comes true within a moment, as a person's eye allows."""
        end = time.time() + seconds
        while not seen():
            if time.time() > end:
                return False
            time.sleep(0.05)
        return True

    def wait_drawn(self, timeout: float = 60) -> None:
        """Until both panes hold one view and the page is idle."""
        self.wait_shown_other_than(None, timeout)

    def wait_shown_other_than(self, shown: str | None, timeout: float = 60) -> float:
        """Until both panes hold a view other than ``shown`` and the page is idle (a choice
        that builds a model first waits for the build); returns the seconds the person
        waited (see `_wait_in_page`)."""
        return self._wait_in_page(shown, must_change=True, timeout=timeout)

    def _wait_in_page(self, shown: str | None, must_change: bool, timeout: float) -> float:
        """Waits in the page itself (`WAIT_IN_PAGE`), a slice of the timeout at a time (a
        script may run a minute at most); the seconds from the last input the page heard (or
        from the start of its load) to the quiet, plus the paint after it."""
        end = time.time() + timeout
        while time.time() < end:
            slice_ms = int(min(30.0, max(0.1, end - time.time())) * 1000)
            found = self.driver.execute_async_script(WAIT_IN_PAGE, shown, must_change,
                                                     CALM_MS, slice_ms)
            if found is not None:
                return found / 1000
        if must_change:
            raise AssertionError(f"the panes still show {shown!r} after {timeout} s")
        raise AssertionError(f"the page was still busy after {timeout} s")

    def _click(self, css: str) -> None:
        self.press(self._all(css)[0])
        time.sleep(0.2)   # a dropdown's menu opens

    def press(self, element) -> None:
        """Click ``element``, with the page set to note when the click lands (the waits
        count from it)."""
        self.driver.execute_script(HEAR_INPUT)
        element.click()

    def _all(self, css: str):
        from selenium.webdriver.common.by import By
        return self.driver.find_elements(By.CSS_SELECTOR, css)


def chromium(width: int = 1600, height: int = 1000):
    """Headless Chromium at a window size, with its console kept for `console_errors`."""
    import shutil

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--no-first-run",
                 f"--window-size={width},{height}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(shutil.which("chromedriver") or "/usr/bin/chromedriver")
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_script_timeout(60)
    return driver


# -- timing the journeys (benchmarks/app.py --journeys) -------------------------------------------

AT_LAST_PASS = ("var r = document.querySelectorAll('.pass-row');"
                "return r.length > 0 && r[r.length - 1].classList.contains('selected');")


@dataclass
class JourneyTimes:
    """Seconds a person waits, from the click to the page idle with the result painted."""

    first_render: list[float]
    steps: list[float]
    tabs: list[float]
    tab_labels: list[str]   # the tab each of ``tabs`` opened
    near_miss: list[float]


def timed_journey(url: str, model: str, size: tuple[int, int] = (1600, 1000),
                  steps: int = 12) -> JourneyTimes:
    """Open ``model``, press Next ``steps`` times, open every tab, click a near miss."""
    person = Person(chromium(*size), url)
    try:
        person.driver.get("about:blank")
        person.driver.get(person.base_url + f"?model={model}")
        first = person.wait_shown_other_than(None, timeout=120)   # from the start of the load
        stepped = []
        for _ in range(steps):
            if person.driver.execute_script(AT_LAST_PASS):
                break
            shown = person.shown()
            person.press(person._all("#step-next")[0])
            stepped.append(person.wait_shown_other_than(shown, timeout=30))
        tabs, labels = [], []
        for tab in person._all(".tab"):
            labels.append(tab.text.strip())
            person.press(tab)
            tabs.append(person.wait_idle())
        near = []
        person.open_tab("Patterns")

        def shown_misses():   # weak near misses sit folded under "more": not clickable
            return [i for i in person._all(".pattern-item.miss") if i.is_displayed()]

        rows = len(person._all(".pass-row"))
        for row in range(rows):   # the first pass with a near miss, as a person looks for one
            if shown_misses():
                break
            person.click(".pass-row", row)
        for index in range(min(3, len(shown_misses()))):
            person.press(shown_misses()[index])   # the list is drawn anew
            near.append(person.wait_idle())
        return JourneyTimes([first], stepped, tabs, labels, near)
    finally:
        person.driver.quit()
