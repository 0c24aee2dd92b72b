"""The app factory: one Dash app per process, all state outside it (URL, page stores, disk)."""

from __future__ import annotations

import dash

from ..data_dirs import assets_dir
from .config import AppConfig
from .page import page
from .page_scripts import GraphLabDash
from .panels import (navigation, registry, settings_gate, stepper, tab_gate, view_fanout,
                     views_in_page)
from .services import Services


def create_app(config: AppConfig | None = None) -> dash.Dash:
    config = config or AppConfig()
    services = Services.from_config(config)
    app = GraphLabDash("graphlab", title="GraphLab pass debugger",
                       assets_folder=assets_dir(),
                       assets_path_ignore=["vendor"],   # loaded when needed (graphlab.js)
                       suppress_callback_exceptions=True, update_title=None)
    # Room for an upload just over the limit, so the page can say "too large" itself.
    app.server.config["MAX_CONTENT_LENGTH"] = config.upload_limit * 2 + (1 << 20)
    app.layout = page(services)
    navigation.register(app, services)
    forwards = page_forwards()
    views_in_page.register(app, services, forwards)
    view_fanout.register(app, forwards)
    for panel in registry.PANELS:
        panel.register(app, services)
    return app


def page_forwards() -> list[view_fanout.Forward]:
    """What the page does with a new view by itself (`view_fanout`), in the order it runs."""
    return [tab_gate.forward(), settings_gate.forward(), stepper.SELECTED_ROW,
            *(panel.forward for panel in registry.PANELS if panel.forward)]
