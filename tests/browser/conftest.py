"""Real-browser tests (dash[testing] + headless Chromium).  Always headless, so a plain
`pytest` works on a machine without a display."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from graphlab.app import AppConfig, create_app
from pane_helpers import wait_for_nodes


def pytest_configure(config):
    if hasattr(config.option, "headless"):
        config.option.headless = True
    # dash[testing] numbers its servers' ports from one constant: the processes running the
    # tests side by side (pytest-xdist's workers gw0, gw1, ...) each count from their own
    # thousand
    from dash.testing.application_runners import BaseDashRunner
    BaseDashRunner._next_port += 1000 * int(os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:])


def pytest_setup_options():
    """dash[testing]'s browser at a person's window (a 1280 x 800 projector), not Chromium's
    800 x 600 default, so the tests see the page as people do; a test about another size sets
    its own."""
    from selenium.webdriver.chrome.options import Options

    options = Options()
    options.add_argument("--window-size=1280,800")
    return options


@pytest.fixture
def graphlab_app(tmp_path):
    return create_app(AppConfig(cache_dir=str(tmp_path / "sessions")))


@pytest.fixture
def started(dash_duo, graphlab_app):
    """The app running, with the default view's panes drawn."""
    dash_duo.start_server(graphlab_app)
    wait_for_nodes(dash_duo)
    return dash_duo


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The app on a loopback port, as `graphlab serve` runs it (one process)."""
    from werkzeug.serving import make_server

    app = create_app(AppConfig(cache_dir=str(tmp_path_factory.mktemp("sessions"))))
    server = make_server("127.0.0.1", 0, app.server, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()


@pytest.fixture
def shots(tmp_path):
    """Where a journey saves its screenshots: GRAPHLAB_SCREENSHOTS, to look at them."""
    folder = Path(os.environ.get("GRAPHLAB_SCREENSHOTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder
