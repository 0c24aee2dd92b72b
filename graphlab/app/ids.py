"""The page's own component ids: its stores, the URL, the tabs, the message areas, and the two
graph panes, which several panels draw into.  Every other id lives in the panel that draws it."""

URL = "url"
URL_HEARD = "url-heard"      # an address the browser went to (Back, Forward): the reducer hears it
VIEW = "view-state"          # the parsed view (by the navigation callback, or made in the page)
VIEW_REDUCED = "view-reduced"   # the view as the navigation callback made it (`view_fanout`)
UI = "ui-state"              # open groups / opened fused bodies (per browser, not in the URL)
UPLOAD_TOKEN = "upload-token"
COMPARE_UPLOAD = "compare-upload-token"   # the second upload, the model to compare with
REDUCED_MODELS = "reduced-models"   # the models this browser's reductions made (model list)
VIEW_PATCH = "view-patch"    # a panel's change request to the view (see view_state.with_patch)
VIEW_SETTINGS = "view-settings"   # the view, when more than the place in it changed
SETTINGS_KEY = "view-settings-key"   # (panels/settings_gate)
VIEW_SHOWN = "view-shown"    # the view, when more than the open tab changed
SHOWN_KEY = "view-shown-key"

NAV_MESSAGE = "nav-message"
UPLOAD_MESSAGE = "upload-message"
MODEL_NOTES = "model-notes"      # what loading the shown model warned of (opaque ops, ...)
TABS = "side-tabs"

BEFORE = "pane-before"
AFTER = "pane-after"

PATTERNS_TAB = "patterns"     # the tab of matches and near misses, and of onnxscript's rules
PATTERN_ITEM = "pattern-item"   # pattern-matching type of a clickable match, miss or decline


def tab_view(tab: str) -> str:
    """The store through which the tab's panels hear the view: it follows the view only while
    the tab is open (`panels/tab_gate`)."""
    return f"view-for-{tab}"
