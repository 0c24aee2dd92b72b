"""Real-browser tests (dash[testing] + headless Chromium).  Always headless, so a plain
`pytest` works on a machine without a display."""

from __future__ import annotations

import pytest

from graphlab.app import AppConfig, create_app
from pane_helpers import wait_for_nodes


def pytest_configure(config):
    if hasattr(config.option, "headless"):
        config.option.headless = True


@pytest.fixture
def graphlab_app(tmp_path):
    return create_app(AppConfig(cache_dir=str(tmp_path / "sessions")))


@pytest.fixture
def started(dash_duo, graphlab_app):
    """The app running, with the default view's panes drawn."""
    dash_duo.start_server(graphlab_app)
    wait_for_nodes(dash_duo)
    return dash_duo
