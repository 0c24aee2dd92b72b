"""What the user is looking at, as a small record that round-trips through the URL.

The URL's query string is the single source of truth for the view (model, pipeline, pass,
selected node, panel, highlight, search, the chart panels' settings, the pattern editor's
text), so a teacher can hand out a link and browser back/forward walk through the views.  Parsing never fails: anything
unreadable falls back to a default, and the page says so rather than breaking.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from functools import cached_property
from urllib.parse import parse_qsl, urlencode

from compiler_core.errors import GraphLabError
from compiler_core.hardware.systolic import DATAFLOWS, TIMINGS
from compiler_core.hardware.targets import DEFAULT_TARGET
from compiler_core.records import record_field

from ..user_input import parse_bindings
from .highlight import Highlight
from .model_edits import MAX_VIEW_EDITS_CHARS
from .workbench import REDUCED_MODEL

OVERLAYS = ("", "intensity", "error")
MAX_TYPED_CHARS = 40
MAX_NAME_CHARS = 200   # a model name (the workbench refuses names it does not offer)
MAX_RULES_CHARS = 300         # an onnxscript rules MODULE[:NAME] or file path


@dataclass(frozen=True)
class Bindings:
    """The bindings box read once per view: the sizes, or why they cannot be read."""
    sizes: dict[str, int] = field(default_factory=dict)
    error: GraphLabError | None = None

    @classmethod
    def read(cls, text: str) -> "Bindings":
        try:
            return cls(parse_bindings(text))
        except GraphLabError as err:
            return cls(error=err)

    def checked(self) -> dict[str, int]:
        """The sizes; a box that could not be read raises its error (a panel shows it)."""
        if self.error is not None:
            raise self.error
        return self.sizes


@dataclass(frozen=True)
class ViewState:
    model: str
    pipeline: str = "O2"
    target: str = DEFAULT_TARGET
    bindings: str = ""
    # index of the selected pass (the URL shows it 1-based); None until the view is checked:
    # the first pass that changed the graph, so a new view never opens on an unchanged pass
    step: int | None = None
    node: int | None = None       # selected node id
    panel: str = "inspector"
    # the item clicked in a list (see highlight.py); in the page's store, in its text form
    highlight: Highlight | None = record_field(omit=True, default=None)
    search: str = ""
    hide_unchanged: bool = False
    overlay: str = ""             # '', 'intensity' or 'error': what colours the panes' nodes
    compare: bool = False         # roofline and memory: the selected pass's before and after
    array: str = ""               # systolic array 'RxC' as typed ('' = the target's)
    dataflow: str = "os"
    timing: str = "overlap"       # the timing model the systolic step-through follows
    gemm: str = ""                # a typed GEMM 'M,N,K' (instead of the selected node)
    sram: str = ""                # systolic SRAM kB per operand as typed ('' = the target's)
    bandwidth: str = ""           # systolic DRAM words per cycle per operand as typed
    versus: str = ""              # compare with: a model name, 'upload' or 'onnxruntime:LEVEL'
    versus_after: bool = False    # compare the pipeline's outputs instead of the models
    rules: str = ""               # onnxscript rules MODULE[:NAME] the patterns panel judges
    pattern: str = ""             # the pattern editor's text, as typed (the editor reads it)
    edits: str = ""               # the model's edits, as compact JSON (`model_edits`)

    def __post_init__(self) -> None:
        # The address's and the page's text form of the highlight is read once, here.
        if not isinstance(self.highlight, (Highlight, type(None))):
            object.__setattr__(self, "highlight", Highlight.decode(str(self.highlight)))

    @cached_property
    def bound(self) -> Bindings:
        """``bindings`` read (the URL keeps the text as typed)."""
        return Bindings.read(self.bindings)

    def with_changes(self, **changes) -> "ViewState":
        return replace(self, **changes)

    json_derived = (("highlight", "highlight_text"),)

    @property
    def highlight_text(self) -> str:
        return _format(self.highlight)

    @classmethod
    def from_dict(cls, data: dict) -> "ViewState":
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


_URL_KEYS = {"model": "model", "pipeline": "pipeline", "target": "target", "bindings": "bind",
             "step": "pass", "node": "node", "panel": "panel", "highlight": "hl",
             "search": "q", "hide_unchanged": "hide", "overlay": "overlay", "compare": "cmp",
             "array": "array", "dataflow": "flow", "timing": "timing", "gemm": "gemm",
             "sram": "sram", "bandwidth": "bw",
             "versus": "vs", "versus_after": "vsout", "rules": "rules", "pattern": "pat",
             "edits": "edits"}
URL_KEY_ORDER = tuple(_URL_KEYS.values())   # the order `to_query` writes them in

# How each field a panel may change is read from text; anything unreadable keeps `fallback`.
# Typed shapes are kept as typed: the panel that reads them says what is wrong with them.
_CHECKS = {
    "step": lambda text, fallback: _int(text, fallback, minimum=0),   # clamped when checked
    "node": lambda text, fallback: _int(text, None, minimum=0),
    "panel": lambda text, fallback: text if _PANEL_NAME.fullmatch(text or "") else fallback,
    "overlay": lambda text, fallback: text if text in OVERLAYS else fallback,
    "compare": lambda text, fallback: text in ("1", "true", "yes"),
    "array": lambda text, fallback: text.strip()[:MAX_TYPED_CHARS],
    "dataflow": lambda text, fallback: text.lower() if text.lower() in DATAFLOWS else fallback,
    "timing": lambda text, fallback: text.lower() if text.lower() in TIMINGS else fallback,
    "gemm": lambda text, fallback: text.strip()[:MAX_TYPED_CHARS],
    "sram": lambda text, fallback: text.strip()[:MAX_TYPED_CHARS],
    "bandwidth": lambda text, fallback: text.strip()[:MAX_TYPED_CHARS],
    "versus": lambda text, fallback: text.strip()[:MAX_NAME_CHARS],
    "versus_after": lambda text, fallback: text in ("1", "true", "yes"),
    "rules": lambda text, fallback: text.strip()[:MAX_RULES_CHARS],
    "pattern": lambda text, fallback: text,
    # kept whole or not at all: a cut list would be another list (read in `model_edits`)
    "edits": lambda text, fallback: text if len(text) <= 2 * MAX_VIEW_EDITS_CHARS else fallback,
    "highlight": lambda text, fallback: Highlight.decode(text),
}
# A panel's name as the URL may give it; which panels exist is the registry's to say (the
# navigation passes their names: this module does not import the panels).
_PANEL_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
_PANEL_SETTINGS = ("overlay", "compare", "array", "dataflow", "timing", "gemm", "sram",
                   "bandwidth", "versus",
                   "versus_after", "rules", "edits")


def to_query(state: ViewState, default: ViewState) -> str:
    """'?model=cnn_bn&pass=2' — only what differs from the default, in a stable order."""
    items = [(_URL_KEYS[name], _format(getattr(state, name) + 1 if name == "step"
                                       else getattr(state, name)))
             for name in _URL_KEYS if getattr(state, name) != getattr(default, name)]
    items = [(k, v) for k, v in items if v != ""]
    return "?" + urlencode(items) if items else ""


def from_query(search: str | None, default: ViewState, panels: Collection[str] = ()) -> ViewState:
    """The view a URL's query names, each value checked; ``panels``: the panels that exist
    (the registry's, given by the caller), when known."""
    params = dict(parse_qsl((search or "").lstrip("?")))
    values = {}
    for name, key in _URL_KEYS.items():
        if key in params:
            values[name] = params[key]
    state = default.with_changes(**{k: v for k, v in values.items()
                                    if k in ("model", "pipeline", "target", "bindings",
                                             "highlight", "search", "pattern")})
    return state.with_changes(
        step=_step(values.get("step"), default.step),
        node=_int(values.get("node"), None, minimum=0),
        panel=_known_panel(values.get("panel"), default.panel, panels),
        hide_unchanged=values.get("hide_unchanged", "") in ("1", "true", "yes"),
        **{name: _CHECKS[name](values[name], getattr(default, name))
           for name in _PANEL_SETTINGS if name in values})


def with_patch(state: ViewState, patch: dict | None, panels: Collection[str] = ()) -> ViewState:
    """A panel's request (a node picked in a chart, a setting changed, a reduced model opened),
    checked as the URL is: panels write patches, and the navigation reducer applies them."""
    model = str((patch or {}).get("model") or "")[:MAX_NAME_CHARS]
    if model.startswith(REDUCED_MODEL) and model != state.model:
        # the one model a panel opens, a reduction it made: its own view, from its first pass
        state = state.with_changes(model=model, step=None, node=None, highlight="", versus="",
                                   overlay="", edits="")
    changes = {name: _CHECKS[name](_format(value), getattr(state, name))
               for name, value in (patch or {}).items() if name in _CHECKS}
    if "panel" in changes:
        changes["panel"] = _known_panel(changes["panel"], state.panel, panels)
    return state.with_changes(**changes)


def _known_panel(text: str | None, fallback: str, panels: Collection[str]) -> str:
    checked = _CHECKS["panel"](text, fallback)
    return checked if not panels or checked in panels else fallback


def _format(value) -> str:
    if value is None:
        return ""
    if isinstance(value, Highlight):
        return value.encode()
    if isinstance(value, bool):
        return "1" if value else ""
    return str(value)


def _step(text: str | None, fallback: int | None) -> int | None:
    """The URL's 1-based pass number as an index."""
    number = _int(text, None, minimum=1)
    return fallback if number is None else number - 1


def _int(text: str | None, fallback: int | None, minimum: int) -> int | None:
    try:
        value = int(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return fallback
    return value if value >= minimum else fallback
