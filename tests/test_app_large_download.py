"""A model too large for one ONNX file downloads from the app as its two files, model and
external data, streamed from the cache dir; checked through the app's real callback endpoint
and route with protobuf's limit lowered (a real 2 GiB download would take minutes)."""

from __future__ import annotations

import re

import pytest

from compiler_core.ir import load_model, model_file, model_limits
from compiler_core.records import to_json
from graphlab.app import AppConfig, create_app
from graphlab.app.panels import exports
from graphlab.app.services import Services
from graphlab.app.view_state import ViewState

from callback_requests import post_callback


@pytest.fixture
def small_limit(monkeypatch):
    for module in (model_file, model_limits):
        monkeypatch.setattr(module, "PROTOBUF_LIMIT", 16 * 1024)


def press(app, button: str, view: dict) -> dict:
    """Click a download button as the browser does; the callback's JSON answer."""
    key = next(k for k in app.callback_map if exports.MESSAGE in k)
    values = {(button, "n_clicks"): 1, ("view-state", "data"): view}
    return post_callback(app, key, values, f"{button}.n_clicks")


def links(answer) -> list[tuple[str, str]]:
    found = []

    def walk(node):
        if isinstance(node, dict):
            props = node.get("props", {})
            if node.get("type") == "A":
                found.append((props["href"], props["download"]))
            for value in props.values() if "props" in node else node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)
    walk(answer)
    return found


def test_a_model_past_the_limit_downloads_as_model_and_data(tmp_path, small_limit):
    config = AppConfig(cache_dir=str(tmp_path / "cache"))
    app = create_app(config)
    view = to_json(ViewState(model="cnn_bn"))
    answer = press(app, exports.MODEL_BUTTON, view)
    message = answer[exports.MESSAGE]["children"]
    assert "more than one ONNX file can hold" in str(message)
    files = links(message)
    assert [name for _, name in files] == ["cnn_bn.optimized.onnx",
                                           "cnn_bn.optimized.onnx.data"]
    client = app.server.test_client()
    for href, name in files:
        response = client.get(href)
        assert response.status_code == 200
        (tmp_path / name).write_bytes(response.data)
    downloaded = load_model(tmp_path / "cnn_bn.optimized.onnx")
    final = Services.from_config(config).workspace(ViewState(model="cnn_bn"), None) \
        .result.snapshots[-1].graph
    assert [n.name for n in downloaded.nodes] == [n.name for n in final.nodes]
    assert sorted(downloaded.initializers) == sorted(final.initializers)
    token = re.search(r"/([0-9a-f]{32})/", files[0][0]).group(1)
    for hostile in (f"{exports.FILE_ROUTE}/{token}/..%2F..%2Fworkspaces",
                    f"{exports.FILE_ROUTE}/{token}/.hidden",
                    f"{exports.FILE_ROUTE}/not-a-token/cnn_bn.optimized.onnx"):
        response = client.get(hostile)   # a 404, or the app's page: never a file
        assert "attachment" not in response.headers.get("Content-Disposition", "")
