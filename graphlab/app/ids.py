"""Component ids shared between the page and the callbacks of different panels."""

URL = "url"
VIEW = "view-state"          # the parsed view (written only by the navigation callback)
UI = "ui-state"              # open groups / opened fused bodies (per browser, not in the URL)
UPLOAD_TOKEN = "upload-token"
PANE_KEY = "pane-key"
VIEW_PATCH = "view-patch"    # a panel's change request to the view (see view_state.with_patch)

MODEL = "model-select"
UPLOAD = "model-upload"
UPLOAD_MESSAGE = "upload-message"
NAV_MESSAGE = "nav-message"
BUILD_PENDING = "build-pending"    # the view waiting for its workspace to be built
BUILD_POLL = "build-poll"          # ticks while a build runs
BUILD_PROGRESS = "build-progress"
REPORT = "report-button"
REPORT_DOWNLOAD = "report-download"
REPORT_MESSAGE = "report-message"
PRESET = "pipeline-preset"
PASSES = "pipeline-passes"
RUN = "pipeline-run"
TARGET = "target-select"
BINDINGS = "bindings-input"

STEPPER = "pass-list"
PASS_ROW = "pass-row"        # pattern-matching type, index = pass index
PREV = "step-prev"
NEXT = "step-next"
HIDE_UNCHANGED = "hide-unchanged"
NUMERIC_CHECK = "numeric-check"
NUMERIC_RESULT = "numeric-result"
NUMERIC_RUNTIME = "numeric-runtime"

BEFORE = "pane-before"
AFTER = "pane-after"
BEFORE_TITLE = "pane-before-title"
AFTER_TITLE = "pane-after-title"
PANE_MESSAGE = "pane-message"
FIT_KEY = "fit-key"          # changes when a new workspace is drawn: the panes re-fit
SEARCH = "node-search"
SEARCH_COUNT = "node-search-count"
EXPAND_ALL = "groups-expand"
COLLAPSE_ALL = "groups-collapse"

TABS = "side-tabs"
INSPECTOR = "inspector"
OPEN_BODY = "open-body"      # pattern-matching type, index = fused node id
PATTERNS = "patterns"
PATTERN_ITEM = "pattern-item"  # pattern-matching type, index = 'match:R:I' / 'miss:R:I'
ROOFLINE = "roofline"
SYSTOLIC = "systolic"
MEMORY = "memory"
