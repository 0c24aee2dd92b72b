"""`graphlab serve` refuses bad arguments with one line, builds the app's config, and on a
first run says where it listens once, under a production server."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import urllib.request

import pytest

from benchmarks.load import free_port, wait_until

from graphlab.cli import build_parser, main
from graphlab.commands.serve import config_from_args
from graphlab.samples import resolve_model


def args_for(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["serve", "--no-browser", *argv])


def test_unknown_model_is_one_line_and_exit_2(capsys):
    assert main(["serve", "--no-browser", "--model", "no_such_model"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no_such_model" in err


def test_bad_worker_count_is_refused(capsys):
    assert main(["serve", "--no-browser", "--workers", "0"]) == 2
    assert "--workers" in capsys.readouterr().err


def test_build_limits_are_checked_and_reach_the_config(capsys):
    assert main(["serve", "--no-browser", "--build-memory-mb", "-1"]) == 2
    assert "--build-memory-mb must be 0 (no limit) or more" in capsys.readouterr().err
    assert main(["serve", "--no-browser", "--build-seconds", "0"]) == 2
    assert "--build-seconds must be between 1 and" in capsys.readouterr().err
    config = config_from_args(args_for("--build-memory-mb", "512", "--build-seconds", "20"))
    assert (config.build_memory_mb, config.build_seconds) == (512, 20)


def test_sample_and_file_models_become_the_default_view():
    assert config_from_args(args_for("--model", "teach_gelu")).default_model == "teach_gelu"
    path = resolve_model("teach_gelu")
    config = config_from_args(args_for("--model", path, "--max-upload-mb", "3"))
    assert config.extra_model_path.endswith("teach_gelu.onnx")
    assert config.upload_limit == 3 << 20


def test_the_app_builds_with_its_callbacks(tmp_path):
    from graphlab.app import AppConfig, create_app

    app = create_app(AppConfig(cache_dir=str(tmp_path)))
    assert len(app.callback_map) >= 6


def test_redis_needs_a_redis_url_and_says_how_to_install_the_extra(capsys, monkeypatch):
    from graphlab.app import shared_storage

    assert main(["serve", "--no-browser", "--redis", "localhost:6379"]) == 2
    assert "is not a Redis URL" in capsys.readouterr().err
    monkeypatch.setattr(shared_storage, "_importable", lambda name: name != "celery")
    assert main(["worker", "--redis", "redis://127.0.0.1:1/0"]) == 2
    err = capsys.readouterr().err
    assert "--redis needs the Python package celery, which is not installed" in err
    assert 'pip install ".[cluster]"' in err


def test_a_worker_without_redis_says_where_to_give_it(capsys, monkeypatch):
    monkeypatch.delenv("GRAPHLAB_REDIS_URL", raising=False)
    assert main(["worker"]) == 2
    assert "--redis redis://HOST:PORT/DB or set GRAPHLAB_REDIS_URL" in capsys.readouterr().err


# ---- the first run, as a person starts it ---------------------------------------------------

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))






def test_first_run_prints_the_address_once_and_serves_without_a_development_server(tmp_path):
    """`graphlab serve` on a machine without a display, as a new user runs it (no
    --no-browser): one line with the address, one line saying no browser could open, no
    development-server warning, gunicorn's control socket in the cache dir and not in HOME."""
    home, cache = tmp_path / "home", tmp_path / "cache"
    home.mkdir()
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if k not in ("DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR")}
    env.update(HOME=str(home), PYTHONPATH=REPO, PYTHONUNBUFFERED="1")
    out, err = open(tmp_path / "out", "w+"), open(tmp_path / "err", "w+")
    server = subprocess.Popen([sys.executable, "-m", "graphlab", "serve", "--port", str(port),
                               "--cache-dir", str(cache)], stdout=out, stderr=err, env=env,
                              cwd=str(tmp_path))
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_until(lambda: "yourself" in (tmp_path / "out").read_text() or server.poll(), 90,
                 "the server said nothing about a browser")
        with urllib.request.urlopen(url, timeout=30) as page:
            assert page.status == 200 and "GraphLab pass debugger" in page.read().decode()
        with urllib.request.urlopen(url + "_dash-layout", timeout=30) as layout:
            assert layout.status == 200
        assert (cache / f"gunicorn-{port}.ctl").exists()
    finally:
        server.send_signal(signal.SIGINT)   # Ctrl+C
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)
    said, warned = (tmp_path / "out").read_text(), (tmp_path / "err").read_text()
    lines = (said + warned).splitlines()
    assert [line for line in lines if f"127.0.0.1:{port}" in line] == [
        f"GraphLab pass debugger on {url}  (Ctrl+C stops it)"], said + warned
    assert [line for line in lines if "browser" in line] == [
        "could not open a browser here (no display): open the address above yourself"]
    assert "development server" not in said + warned and "WARNING" not in said + warned
    assert warned == "" and server.returncode == 0
    assert not (home / ".gunicorn").exists()


def test_a_port_in_use_is_one_line_before_any_preparing(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--no-browser", "--port", str(port)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert f"cannot listen on 127.0.0.1:{port}" in err and "--port N" in err


def test_every_mode_keeps_gunicorns_control_socket_in_the_cache_dir(tmp_path):
    from graphlab.app import AppConfig
    from graphlab.app.multiprocess import gunicorn_options

    config = AppConfig(cache_dir=str(tmp_path))
    one, room = (gunicorn_options(config, "127.0.0.1", 8050, n) for n in (1, 3))
    assert one["control_socket"] == room["control_socket"] == str(tmp_path / "gunicorn-8050.ctl")
    assert (one["worker_class"], one["threads"]) == ("gthread", 8)   # a page's calls at once
    assert "worker_class" not in room and room["workers"] == 3
    deep = AppConfig(cache_dir=str(tmp_path / ("x" * 120)))
    assert gunicorn_options(deep, "127.0.0.1", 8050, 1) \
        .get("control_socket_disable") is True          # too long for a Unix socket: none


def test_a_browser_that_does_not_open_is_said_in_one_line(capsys, monkeypatch):
    import webbrowser

    from graphlab.commands import serve

    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.setattr(webbrowser, "open", lambda url: False)
    assert serve.open_browser("http://127.0.0.1:8050/") is False
    assert capsys.readouterr().out == ("could not open a browser here: open the address above "
                                       "yourself\n")
    monkeypatch.delenv("DISPLAY")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr(webbrowser, "open", lambda url: pytest.fail("tried a browser"))
    assert serve.open_browser("http://127.0.0.1:8050/") is False
    assert "(no display)" in capsys.readouterr().out


def test_a_default_view_that_cannot_be_shown_says_why_instead_of_failing(tmp_path):
    """Nothing to fall back on (the first view itself fails): the page says why, no HTTP 500."""
    import threading

    from werkzeug.serving import make_server

    from benchmarks.graphlab_page import open_page
    from graphlab.app import AppConfig, create_app

    app = create_app(AppConfig(cache_dir=str(tmp_path), default_model="gone_sample"))
    server = make_server("127.0.0.1", 0, app.server, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        page = open_page(f"http://127.0.0.1:{server.server_port}")
        message = page.get("nav-message", "children")
        assert page.errors == []
        assert "there is no model named 'gone_sample' here" in message["props"]["children"]
    finally:
        server.shutdown()


def test_opening_the_page_computes_nothing_for_a_tab_nobody_opened(tmp_path):
    """The systolic tab's whole-model table schedules every GEMM of every pass: as the page
    loads (on the inspector) it is neither asked for nor computed, nor are the onnxscript
    rules' verdicts of the closed Patterns tab.  Nor is what the layout already holds asked
    again: the banner (nothing to watch on one machine), the rewiring note (nothing picked)."""
    import threading

    from werkzeug.serving import make_server

    from benchmarks.graphlab_page import open_page
    from graphlab.app import AppConfig, create_app
    from graphlab.app import ids
    from graphlab.app.panels import edit_controls, onnxscript_rules, service_banner, systolic
    from graphlab.app.panels.panes import UPDATES

    app = create_app(AppConfig(cache_dir=str(tmp_path)))
    server = make_server("127.0.0.1", 0, app.server, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        page = open_page(f"http://127.0.0.1:{server.server_port}", "?model=cnn_bn")
        page.settle()   # the build of cnn_bn, then the page's first view
        asked = {timing.callback for timing in page.timings}
        assert page.errors == []
        assert f"{UPDATES[ids.BEFORE]}.data" in asked   # the page did load its view
        assert f"{systolic.PASSES}.children" not in asked
        assert f"{onnxscript_rules.BODY}.children" not in asked
        for unasked in (f"{service_banner.BANNER}.children", f"{edit_controls.PICK_NOTE}.children"):
            assert unasked not in asked, unasked
    finally:
        server.shutdown()
