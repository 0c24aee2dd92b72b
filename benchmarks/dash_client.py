"""A browser tab as the Dash server sees it: the callback requests the renderer would send.

It reads the app's callback signatures (`/_dash-dependencies`) and layout (`/_dash-layout`),
keeps every component's props, and after each change fires the callbacks whose inputs changed
— upstream ones first, independent ones in parallel like a browser's six connections — with
the payloads the renderer builds (`POST /_dash-update-component`).  Components drawn by a
callback (pattern-matching ids included) join the page and fire their initial callbacks;
enabled dcc.Interval components tick.  Clientside callbacks are skipped (no JavaScript here)
unless the caller gives a Python stand-in for one (see `Tab.open`); answers that
are `dash.Patch` updates are applied to the props they patch.
"""

from __future__ import annotations

import json
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import requests

CONNECTIONS = 6   # a browser's parallel requests to one host
BACKGROUND_POLLS = {"service-banner-poll"}   # tick for the page's whole life: never "settled"
NO_UPDATE = object()   # what a clientside stand-in returns to change nothing


@dataclass(frozen=True)
class Trigger:
    """One prop that set a clientside callback off: what the page's ``callback_context.
    triggered`` holds (``id`` is a dict for a pattern-matching component)."""
    id: object
    prop: str
    value: object


def stand_in_key(output: str, first_input: str) -> str:
    """How a stand-in is named: the callback's outputs as Dash names them ("id.prop", several
    as "..a.p...b.q..") without the marks ``allow_duplicate`` adds ("@hash"), and the id of its
    first input as Dash writes it (a pattern as '{"index":["ALL"],"type":"row"}'): two
    callbacks may share their outputs, not their first input."""
    return f"{re.sub(r'@[0-9a-f]+', '', output)} <- {first_input}"


def patched(value, patch: dict):
    """``value`` after a `dash.Patch` update (the assignments this app sends)."""
    for operation in patch["operations"]:
        if operation["operation"] != "Assign":
            raise NotImplementedError(f"Patch operation {operation['operation']}")
        *path, last = operation["location"]
        target = value
        for key in path:
            target = target[key]
        target[last] = operation["params"]["value"]
    return value


def id_key(component_id) -> str:
    """One string per component id (dict ids as sorted JSON, like the renderer)."""
    if isinstance(component_id, dict):
        return json.dumps(component_id, sort_keys=True, separators=(",", ":"))
    return str(component_id)


@dataclass(frozen=True)
class Dependency:
    id: object            # a string, or a dict whose values may be the wildcard ["ALL"]
    prop: str

    @classmethod
    def parse(cls, spec: dict) -> "Dependency":
        raw = spec["id"]
        return cls(json.loads(raw) if raw.startswith("{") else raw, spec["property"])

    @property
    def wildcard(self) -> bool:
        return isinstance(self.id, dict) and any(v == ["ALL"] for v in self.id.values())

    def matches(self, component_id) -> bool:
        if not isinstance(self.id, dict):
            return self.id == component_id
        return isinstance(component_id, dict) and component_id.keys() == self.id.keys() and all(
            v == ["ALL"] or component_id[k] == v for k, v in self.id.items())


@dataclass(eq=False)
class Callback:
    output: str
    outputs: list[Dependency]
    inputs: list[Dependency]
    state: list[Dependency]
    multi: bool
    initial: bool
    local: Callable | None = None   # a clientside callback's stand-in (see `Tab.open`)

    @classmethod
    def parse(cls, spec: dict) -> "Callback":
        output = spec["output"]
        multi = output.startswith("..")
        parts = output[2:-2].split("...") if multi else [output]
        outputs = []
        for part in parts:
            raw, _, prop = part.rpartition(".")
            outputs.append(Dependency.parse({"id": raw, "property": prop}))
        return cls(output, outputs, [Dependency.parse(d) for d in spec["inputs"]],
                   [Dependency.parse(d) for d in spec["state"]], multi,
                   not spec.get("prevent_initial_call"))

    @property
    def name(self) -> str:
        """A short label for timings: the first output, without the duplicate-output hash."""
        first = self.outputs[0]
        return f"{id_key(first.id)}.{first.prop.split('@')[0]}"


@dataclass
class Timing:
    callback: str
    seconds: float
    status: int
    sent: float      # wall-clock time the request left
    bytes: int = 0   # the response body's size


@dataclass
class Tab:
    """One user's page."""

    base_url: str
    callbacks: list[Callback]
    layout: dict
    http: requests.Session = field(default_factory=requests.Session)
    timings: list[Timing] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    timeout: float = 120.0

    def __post_init__(self) -> None:
        self.props: dict[str, dict] = {}
        self.ids: dict[str, object] = {}
        self.owned: dict[str, set[str]] = {}    # "id.children" -> components drawn there
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(CONNECTIONS)
        self._add(self.layout, None)

    @classmethod
    def open(cls, base_url: str, search: str = "",
             clientside: dict[str, Callable] | None = None, **kwargs) -> "Tab":
        """``clientside``: Python stand-ins for clientside callbacks, by `stand_in_key`;
        called with what triggered them (`Trigger`s, as the page's ``callback_context``), then
        the inputs' and the state's values, they return the output's value (or
        ``NO_UPDATE``)."""
        http = requests.Session()
        clientside = clientside or {}
        callbacks = []
        for spec in http.get(f"{base_url}/_dash-dependencies").json():
            key = stand_in_key(spec["output"], spec["inputs"][0]["id"] if spec["inputs"] else "")
            if spec.get("clientside_function") and key not in clientside:
                continue
            callbacks.append(Callback.parse(spec))
            callbacks[-1].local = clientside.get(key)
        tab = cls(base_url, callbacks, http.get(f"{base_url}/_dash-layout").json(), http, **kwargs)
        for key, props in tab.props.items():
            if props.get("_type") == "Location":
                props.update(pathname="/", search=search, href=f"{base_url}/{search}", hash="")
        tab._run([c for c in callbacks if c.initial and tab._present(c)], changed=[])
        return tab

    def close(self) -> None:
        self._pool.shutdown()
        self.http.close()

    # ---- what a user does -------------------------------------------------------------------

    def set(self, component_id, **props) -> None:
        """A user changes props (a click is n_clicks + 1); the callbacks follow."""
        key = id_key(component_id)
        self.props[key].update(props)
        changed = [(key, prop) for prop in props]
        self._run(self._triggered(changed, exclude=None), changed)

    def click(self, component_id) -> None:
        key = id_key(component_id)
        self.set(component_id, n_clicks=(self.props[key].get("n_clicks") or 0) + 1)

    def get(self, component_id, prop: str):
        return self.props.get(id_key(component_id), {}).get(prop)

    def find(self, type_name: str) -> list[dict]:
        """Ids of the pattern-matching components of one type, in page order."""
        return [i for i in self.ids.values() if isinstance(i, dict) and i.get("type") == type_name]

    def settle(self, limit: float = 120.0) -> None:
        """Let enabled intervals tick (e.g. while a build runs) until all are disabled (the
        background polls aside)."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            ticking = [k for k, p in self.props.items()
                       if p.get("_type") == "Interval" and p.get("disabled") is False
                       and k not in BACKGROUND_POLLS]
            if not ticking:
                return
            time.sleep(min(self.props[k].get("interval", 1000) for k in ticking) / 1000)
            for key in ticking:
                props = self.props[key]
                props["n_intervals"] = (props.get("n_intervals") or 0) + 1
            changed = [(k, "n_intervals") for k in ticking]
            self._run(self._triggered(changed, exclude=None), changed)
        self.errors.append(f"intervals still ticking after {limit:.0f} s")

    # ---- the renderer's part ----------------------------------------------------------------

    def _add(self, node, owner: str | None) -> None:
        if isinstance(node, list):
            for child in node:
                self._add(child, owner)
            return
        if not isinstance(node, dict) or "props" not in node:
            return
        props = node["props"]
        if "id" in props:
            key = id_key(props["id"])
            self.ids[key] = props["id"]
            self.props[key] = {**{k: v for k, v in props.items() if k != "id"},
                               "_type": node.get("type")}
            if owner is not None:
                self.owned.setdefault(owner, set()).add(key)
        for value in props.values():
            if isinstance(value, (dict, list)):
                self._add(value, owner)

    def _present(self, callback: Callback) -> bool:
        return all(d.wildcard or id_key(d.id) in self.props for d in callback.inputs)

    def _matching(self, dep: Dependency) -> list[str]:
        if not dep.wildcard:
            return [id_key(dep.id)]
        return [k for k, i in self.ids.items() if dep.matches(i)]

    def _triggered(self, changed: list[tuple[str, str]], exclude: Callback | None) -> list[Callback]:
        return [c for c in self.callbacks if c is not exclude and any(
            d.prop == prop and (key in self._matching(d)) for d in c.inputs
            for key, prop in changed) and self._present(c)]

    def _run(self, pending: list[Callback], changed: list[tuple[str, str]]) -> None:
        """Fire callbacks, upstream ones first, and whatever their outputs trigger."""
        pending = list(dict.fromkeys(pending))
        changed_by = {c: list(changed) for c in pending}
        while pending:
            blocked = {c for c in pending for other in pending if other is not c
                       and self._feeds(other, c)}
            ready = [c for c in pending if c not in blocked] or pending[:1]
            pending = [c for c in pending if c not in ready]
            for callback, updates, added in self._pool.map(
                    lambda c: self._fire(c, changed_by.pop(c, [])), ready):
                for follower in self._triggered(updates, exclude=callback):
                    if follower not in pending:
                        pending.append(follower)
                    changed_by.setdefault(follower, []).extend(updates)
                for follower in self.callbacks:   # new components fire their initial calls
                    drawn = [(k, d.prop) for d in follower.inputs if d.wildcard for k in added
                             if k in self.ids and d.matches(self.ids[k])]
                    if drawn and follower.initial and self._present(follower):
                        if follower not in pending:
                            pending.append(follower)
                        changed_by.setdefault(follower, []).extend(drawn)

    def _feeds(self, upstream: Callback, downstream: Callback) -> bool:
        outs = {(key, d.prop.split("@")[0]) for d in upstream.outputs for key in self._matching(d)}
        return any((key, d.prop) in outs for d in downstream.inputs for key in self._matching(d))

    def _payload(self, callback: Callback, changed: list[tuple[str, str]]) -> dict:
        def values(deps: list[Dependency], with_value: bool) -> list:
            out = []
            for dep in deps:
                items = [{"id": self.ids[k], "property": dep.prop,
                          **({"value": self.ids[k] if dep.prop == "id"
                              else self.props[k].get(dep.prop)} if with_value else {})}
                         for k in self._matching(dep)]
                out.append(items if dep.wildcard else items[0])
            return out

        with self._lock:
            outputs = values(callback.outputs, with_value=False)
            return {"output": callback.output, "outputs": outputs if callback.multi else outputs[0],
                    "inputs": values(callback.inputs, True),
                    "state": values(callback.state, True),
                    "changedPropIds": [f"{key}.{prop}" for key, prop in dict.fromkeys(changed)]}

    def _fire(self, callback: Callback, changed: list[tuple[str, str]]):
        """POST one callback; apply its response.  Returns (callback, props changed, added)."""
        if callback.local is not None:
            return self._run_locally(callback, changed)
        sent, started = time.time(), time.perf_counter()
        try:
            reply = self.http.post(f"{self.base_url}/_dash-update-component",
                                   json=self._payload(callback, changed), timeout=self.timeout)
            status = reply.status_code
        except requests.RequestException as err:
            self.timings.append(Timing(callback.name, time.perf_counter() - started, 0, sent))
            self.errors.append(f"{callback.name}: {type(err).__name__}")
            return callback, [], []
        self.timings.append(Timing(callback.name, time.perf_counter() - started, status, sent,
                                   len(reply.content)))
        if status == 204:
            return callback, [], []
        if status != 200:
            self.errors.append(f"{callback.name}: HTTP {status}")
            return callback, [], []
        body = reply.json()
        return (callback, *self._apply([body.get("sideUpdate") or {}, body.get("response") or {}]))

    def _run_locally(self, callback: Callback, changed: list[tuple[str, str]]):
        """A clientside callback, by its Python stand-in (a value per output when it has more
        than one)."""
        payload = self._payload(callback, [])
        values = [[i.get("value") for i in d] if isinstance(d, list) else d.get("value")
                  for d in payload["inputs"] + payload["state"]]
        heard = {(key, d.prop) for d in callback.inputs for key in self._matching(d)}
        with self._lock:
            triggered = [Trigger(self.ids.get(key, key), prop, self.props.get(key, {}).get(prop))
                         for key, prop in dict.fromkeys(changed) if (key, prop) in heard]
        value = callback.local(triggered, *values)
        answers = value if len(callback.outputs) > 1 else [value]
        section: dict[str, dict] = {}
        for target, answer in zip(callback.outputs, answers):
            if answer is not NO_UPDATE:
                section.setdefault(id_key(target.id), {})[target.prop.split("@")[0]] = answer
        if not section:
            return callback, [], []
        return (callback, *self._apply([section]))

    def _apply(self, sections: list[dict]) -> tuple[list, list]:
        """Set the answered props; (props changed, components added)."""
        updates, added = [], []
        with self._lock:
            for section in sections:
                for raw, props in section.items():
                    key = id_key(json.loads(raw) if raw.startswith("{") else raw)
                    if key not in self.props:
                        continue
                    for prop, value in props.items():
                        if isinstance(value, dict) and "__dash_patch_update" in value:
                            value = patched(self.props[key].get(prop), value)
                        if prop == "children":
                            added += self._redraw(f"{key}.children", value)
                        self.props[key][prop] = value
                        updates.append((key, prop))
        return updates, added

    def _redraw(self, owner: str, children) -> list[str]:
        self._forget(owner)
        self._add(children, owner)
        return list(self.owned.get(owner, ()))

    def _forget(self, owner: str) -> None:
        for key in self.owned.pop(owner, set()):
            self.props.pop(key, None)
            self.ids.pop(key, None)
            self._forget(f"{key}.children")
