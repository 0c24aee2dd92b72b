"""What a panel declares about itself, at the end of its module: its name, where its layout
goes, its callbacks, and its tab.  `registry` lists the declarations in page order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .view_fanout import Forward

# Where a panel's layout goes, top to bottom, left to right.
TOP = "top"          # the load bar
STATUS = "status"    # under the load bar: what the page is busy with
MAIN = "main"        # the columns left of the tabs
TAB = "tab"          # a tab of the right-hand column
INSIDE = "inside"    # no place of its own: another panel's layout draws its parts


@dataclass(frozen=True)
class Panel:
    name: str           # the tab's value in the URL (`panel=`); the prefix of the panel's ids
    place: str
    register: Callable  # register(app, services): the panel's callbacks
    layout: Callable | None = None   # layout(services) -> the panel's components
    tab: str = ""       # the tab's label
    follows_selection: bool = False  # a tap in the panes keeps this tab open
    # With no node selected it shows the same on every pass (the inspector's hint), so a step
    # without a selection asks it nothing (`tab_gate`).
    about_a_node: bool = False
    # What the page itself does with each new view for this panel, joined with the page's
    # other listeners in one callback (`view_fanout`).
    forward: Forward | None = None
