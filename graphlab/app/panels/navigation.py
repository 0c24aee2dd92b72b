"""The one place the server changes the view: every control, click and the URL feed one reducer.
The clicks whose view the page can work out alone (a step, a tab, an item, a node) are made in
the page (`views_in_page`).  The reducer reads the address as the page loads, and hears it
again only when the browser goes Back or Forward (`ids.URL_HEARD`, set by the page's script):
never the addresses the page or the reducer wrote.

It is not a panel (it draws nothing): the factory registers it before the panels' callbacks.

The URL is the source of truth.  A user action makes a new ViewState, which is checked (the
model loads, the pipeline runs), pushed to the URL (a new history entry) and written back to
every control; browser back/forward change the URL, which is parsed and written to the controls
the same way.  Dash allows this loop only inside a single callback, hence one reducer.

A view whose workspace is not built yet waits in `build_progress.PENDING` while a builder process
works (see `builds`) and the poll ticks; each tick re-reads it, and the view appears once built.
A view that cannot be read because a cluster's Redis is away waits the same way, and appears
once Redis answers again.
The reducer never waits for a build itself, so every other click is answered at once.
"""

from __future__ import annotations

from dash import ALL, Input, Output, State, ctx, html, no_update

from compiler_core.passes.framework.pass_registry import resolve_pipeline
from compiler_core.records import to_json

from .. import ids
from ..builds import BuildStatus
from ..services import Services, preset_names
from ..cache_trouble import SharedCacheUnreachable
from ..view_state import ViewState, from_query, to_query, with_patch
from ..workbench import UPLOAD_MODEL, Workspace
from .build_progress import PENDING, POLL, RETRY, failure_message
from .controls import BINDINGS, MODEL, PASSES, PRESET, RUN, TARGET
from .panes import SEARCH
from .registry import tab_names
from .stepper import HIDE_UNCHANGED

CLICKS = {RUN, RETRY}

OUTPUTS = {
    "url": Output(ids.URL, "search"), "view": Output(ids.VIEW, "data"),
    "reduced": Output(ids.VIEW_REDUCED, "data"),   # the same view, for the page's forward of it
    "model": Output(MODEL, "value"), "preset": Output(PRESET, "value"),
    "passes": Output(PASSES, "value"), "target": Output(TARGET, "value"),
    "bindings": Output(BINDINGS, "value"), "panel": Output(ids.TABS, "value"),
    "hide": Output(HIDE_UNCHANGED, "value"), "query": Output(SEARCH, "value"),
    "message": Output(ids.NAV_MESSAGE, "children"),
    "notes": Output(ids.MODEL_NOTES, "children"), "noted": Output(ids.MODEL_NOTES, "title"),
    "pending": Output(PENDING, "data"), "poll_off": Output(POLL, "disabled"),
}
INPUTS = {
    "search": Input(ids.URL_HEARD, "data"), "model": Input(MODEL, "value"),
    "upload": Input(ids.UPLOAD_TOKEN, "data"), "preset": Input(PRESET, "value"),
    "_run": Input(RUN, "n_clicks"), "passes": Input(PASSES, "value"),
    "target": Input(TARGET, "value"), "bindings": Input(BINDINGS, "value"),
    "hide": Input(HIDE_UNCHANGED, "value"),
    "query": Input(SEARCH, "value"), "patch": Input(ids.VIEW_PATCH, "data"),
    "_tick": Input(POLL, "n_intervals"), "_retries": Input({"type": RETRY, "index": ALL}, "n_clicks"),
}
STATE = {"view": State(ids.VIEW, "data"), "pending": State(PENDING, "data"),
         "upload_b": State(ids.COMPARE_UPLOAD, "data"),
         "panel": State(ids.TABS, "value"),   # a tab opens on the page (`views_in_page`)
         "noted": State(ids.MODEL_NOTES, "title"),
         "address": State(ids.URL, "search")}   # as the page loads, before it is heard


def register(app, services: Services) -> None:
    default = services.default_state

    @app.callback(output=OUTPUTS, inputs=INPUTS, state=STATE,
                  prevent_initial_call="initial_duplicate")
    def navigate(**values):
        return _every_output(_navigate(**values))

    def _navigate(search, upload, view, pending, upload_b, address, noted, **inputs) -> dict:
        trigger = ctx.triggered_id
        if search is None:   # as the page loads, before anything was heard: the address
            search = address
        kind = trigger.get("type") if isinstance(trigger, dict) else trigger
        if kind in CLICKS and not ctx.triggered[0]["value"]:
            return {}   # a freshly drawn button, not a click
        token = (upload or {}).get("token")
        previous = ViewState.from_dict(view) if view else None
        from_url = trigger is None or trigger == ids.URL_HEARD
        if kind == POLL:
            if not pending:
                return {"pending": None, "poll_off": True}
            wanted, from_url = ViewState.from_dict(pending["view"]), pending["from_url"]
        elif kind == RETRY:   # the view whose build failed, built afresh
            wanted = from_query(trigger["index"], default, tab_names())
        elif from_url or previous is None:
            wanted = from_query(search, default, tab_names())
            if wanted == previous:   # the address names the view the page holds
                return {}
        else:
            wanted = _apply(previous, kind, trigger, inputs)
            if wanted is None:
                return {}
        try:
            if kind == RETRY:
                services.forget_failure(wanted, token, upload_b)
            checked = _checked(services, wanted, token, upload_b)
            message = ""
        except SharedCacheUnreachable as err:   # Redis away: the view waits and the poll retries
            return {"message": html.Div(str(err), className="message error"),
                    "pending": {"view": to_json(wanted), "from_url": from_url, "key": "",
                                "text": str(err)},
                    "poll_off": False}
        except Exception as err:  # noqa: BLE001 - the page shows it; the view stays usable
            message = failure_message(err, to_query(wanted, default))
            if wanted == (previous or default):   # nothing else to show: the message says why
                return {"message": message}
            wanted, from_url = previous or default, False
            try:
                checked = _checked(services, wanted, token, upload_b)
            except Exception:  # noqa: BLE001 - the view to fall back on fails too
                return {"message": message}
        if isinstance(checked, BuildStatus):
            return {"message": message, "poll_off": False,
                    "pending": {"view": to_json(wanted), "from_url": from_url,
                                "key": checked.key, "text": checked.text()}}
        state, workspace = checked
        shown = {"model": state.model, "preset": _preset_of(state.pipeline),
                 "passes": _passes_text(state, workspace), "target": state.target,
                 "bindings": workspace.sizes.text(), "panel": state.panel,
                 "hide": ["hide"] if state.hide_unchanged else [], "query": state.search}
        # A control that already shows its value is left alone (and so is the build poll
        # when nothing waits): every prop an answer sets sets off the callbacks that read it.
        # A view that was waited for leaves the message as it is: the wait began by clearing
        # it, or by saying why the view asked for could not be shown instead.
        answer = {name: value for name, value in shown.items() if value != inputs.get(name)}
        answer["view"] = to_json(state)
        warned = workspace.result.initial.warnings
        if "\n".join(warned) != (noted or ""):
            answer.update(notes=model_notes(warned), noted="\n".join(warned))
        if not (from_url and not message):
            answer["url"] = to_query(state, default)
        if not (kind == POLL and message == ""):
            answer["message"] = message
        if pending:
            answer.update(pending=None, poll_off=True)
        return answer


def _every_output(answer: dict) -> dict:
    """The outputs the answer names; the others left as they are."""
    if "view" in answer:
        answer = {**answer, "reduced": answer["view"]}
    return {name: answer.get(name, no_update) for name in OUTPUTS}


def model_notes(warnings: list[str]) -> html.Details | str:
    """What loading the shown model warned of (an op GraphLab does not know, a broken
    quantization scale, ...), kept above the panes while the model is shown, since each one
    changes what the views can say: one line, its headline; opened, each warning in full as
    the CLI prints it (a projector has no room for four lines of it)."""
    if not warnings:
        return ""
    more = f" (and {len(warnings) - 1} more)" if len(warnings) > 1 else ""
    return html.Details([html.Summary(f"This model: {_headline(warnings[0])}{more}"),
                         *[html.Div(warning) for warning in warnings]],
                        className="message warning")


def _headline(warning: str) -> str:
    """A warning's first clause: what is wrong, before the details and what to do."""
    cuts = [at for at in (warning.find(" ("), warning.find(": "), warning.find("; "))
            if at > 0]
    return warning[:min(cuts)] if cuts else warning


def _apply(state: ViewState, kind: str, trigger, inputs: dict) -> ViewState | None:
    """The new view after one user action (None: nothing to do)."""
    if kind == MODEL:
        if inputs["model"] in (None, state.model):   # the list cleared itself or re-chose it
            return None
        return state.with_changes(model=inputs["model"], step=None, node=None, highlight="",
                                  edits="")   # edits name a model's nodes: not another's
    if kind == ids.UPLOAD_TOKEN:
        return state.with_changes(model=UPLOAD_MODEL, step=None, node=None, highlight="",
                                  edits="")
    if kind == PRESET:
        if not inputs["preset"]:
            return None
        return state.with_changes(pipeline=inputs["preset"], step=None, highlight="")
    if kind in (RUN, PASSES):   # an empty box runs the preset again
        return state.with_changes(pipeline=_pipeline_text(inputs["passes"]) or state.pipeline,
                                  step=None, highlight="")
    if kind == TARGET:
        return state.with_changes(target=inputs["target"])
    if kind == BINDINGS:
        return state.with_changes(bindings=(inputs["bindings"] or "").replace(" ", ""))
    if kind == HIDE_UNCHANGED:
        return state.with_changes(hide_unchanged=bool(inputs["hide"]))
    if kind == SEARCH:
        return state.with_changes(search=(inputs["query"] or "").strip())
    if kind == ids.VIEW_PATCH:
        return with_patch(state, inputs["patch"], tab_names())
    return None


def _checked(services: Services, state: ViewState, token: str | None, upload_b: dict | None
             ) -> tuple[ViewState, Workspace] | BuildStatus:
    """The state on its workspace, with the step on a pass that exists (and is shown) — a
    view that names none opens on the first pass that changed the graph; or the status of the
    build the workspace waits for."""
    workspace = services.workspace_or_build(state, token, upload_b)
    if isinstance(workspace, BuildStatus):
        return workspace
    step = workspace.clamp_step(state.step)
    if state.hide_unchanged:
        step = _nearest_changed(workspace, step)
    return state.with_changes(step=step), workspace


def _nearest_changed(workspace: Workspace, step: int) -> int:
    """The changed pass nearest ``step``, looking first at the later ones (a step in the page
    lands on a shown pass: this is for an address that names a hidden one)."""
    changed = [s.index for s in workspace.result.snapshots if s.changed]
    if not changed or step in changed:
        return step
    later = [i for i in changed if i > step]
    earlier = [i for i in changed if i < step]
    return (later or earlier[::-1])[0]


def _passes_text(state: ViewState, workspace: Workspace) -> str:
    """The passes box: empty under a preset (the pass list shows its passes), else the
    passes run (a comparison's one step is not a pass)."""
    if _preset_of(state.pipeline):
        return ""
    if workspace.comparison is not None:
        return ",".join(resolve_pipeline(state.pipeline or None))
    return ",".join(s.pass_name for s in workspace.result.snapshots)


def _pipeline_text(passes: str | None) -> str:
    names = [p.strip() for p in (passes or "").split(",") if p.strip()]
    for preset in preset_names():
        if names == resolve_pipeline(preset):
            return preset
    return ",".join(names)


def _preset_of(pipeline: str) -> str | None:
    return pipeline if pipeline in preset_names() else None
