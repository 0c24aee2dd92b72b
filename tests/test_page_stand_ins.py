"""The page client's stand-ins for the views the page makes itself (`views_in_page`): the URL
each writes names the very view it made, so a reload or a Back to that address, which the
navigation reducer reads, shows that view again — as in the browser."""

from benchmarks.dash_client import NO_UPDATE, Trigger
from benchmarks.graphlab_page import _open_tab, _pick_item, _pick_node, _step
from graphlab.app import ids
from graphlab.app.panels.stepper import NEXT, PREV, ROW
from compiler_core.records import to_json
from graphlab.app.view_state import ViewState, from_query

DEFAULT = ViewState(model="cnn_bn")
PANELS = ("inspector", "patterns", "roofline", "memory")
ROWS = [{"type": ROW, "index": i} for i in range(5)]
CLASSES = ["pass-row", "pass-row unchanged", "pass-row selected", "pass-row unchanged",
           "pass-row"]


def _view(**changes) -> dict:
    return to_json(DEFAULT.with_changes(**changes))


def _read_back(made: tuple) -> tuple[dict, ViewState]:
    view, search, _, _ = made
    return view, from_query(search, DEFAULT, PANELS)


def test_a_step_writes_the_url_of_the_step_it_made():
    start = _view(step=2, highlight="rule-miss:2:0:4.5/6/7", node=3)
    view, read = _read_back(_step([Trigger(NEXT, "n_clicks", 1)], 1, 1, [None] * 5, CLASSES,
                                  ROWS, start, "?model=other&pass=3&node=3&hl=x", ""))
    assert view["step"] == read.step == 3 and read.highlight is None and read.node == 3


def test_hiding_unchanged_passes_skips_them_both_ways():
    start = _view(step=2, hide_unchanged=True)
    later = _step([Trigger(NEXT, "n_clicks", 1)], 0, 1, [None] * 5, CLASSES, ROWS, start, "", "")
    earlier = _step([Trigger(PREV, "n_clicks", 1)], 1, 0, [None] * 5, CLASSES, ROWS, start, "",
                    "")
    assert (later[0]["step"], earlier[0]["step"]) == (4, 0)


def test_a_row_clicked_is_the_step_and_a_fresh_row_is_no_click():
    start = _view(step=2)
    row = _step([Trigger({"type": ROW, "index": 1}, "n_clicks", 1)], 0, 0, [None, 1], CLASSES,
                ROWS, start, "", "an earlier message")
    assert row[0]["step"] == 1 and row[2] == ""          # the old message is cleared
    fresh = _step([Trigger({"type": ROW, "index": 1}, "n_clicks", None)], 0, 0, [None] * 5,
                  CLASSES, ROWS, start, "", "")
    assert fresh == (NO_UPDATE,) * 4


def test_a_tab_an_item_and_a_tapped_node_write_their_views_urls():
    start = _view(step=2, panel="roofline")
    view, read = _read_back(_open_tab("inspector")([], "memory", start, "?pass=3", ""))
    assert view["panel"] == read.panel == "memory"
    view, read = _read_back(_pick_item("inspector")(
        [Trigger({"type": ids.PATTERN_ITEM, "index": "rule-miss:2:0:4.5/6/7"}, "n_clicks", 1)],
        [1], start, "?pass=3&panel=roofline", ""))
    assert (read.panel, read.highlight_text) == ("patterns", "rule-miss:2:0:4.5/6/7")
    assert view["highlight"] == read.highlight_text
    made = _pick_node("inspector")([Trigger(ids.AFTER, "tapNodeData",
                                            {"kind": "node", "node_id": "7"})], None, None,
                                   _view(step=2, panel="patterns"), "?pass=3&panel=patterns", "")
    view, read = _read_back(made)
    assert (view["node"], read.node, read.panel, made[3]) == (7, 7, "inspector", "inspector")
