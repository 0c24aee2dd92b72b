"""The pass debugger in the browser: a Dash app over the PassManager's snapshots.

Modules, one job each: ``factory`` builds the app; ``page`` arranges the panels; ``panels/``
holds one module per panel with its callbacks; ``view_state`` is the URL-backed view record;
``sessions`` stores uploads per browser; ``workbench`` builds (and caches) workspaces;
``scopes`` groups nodes; ``graph_layout``, ``stable_positions`` and ``nested_layout`` place
them, one group at a time; ``elements``, ``group_elements``, ``styles`` and ``pane_payload``
turn a pass into what the two panes draw.
"""

from .config import AppConfig

__all__ = ["AppConfig", "create_app"]


def __getattr__(name: str):
    # The factory imports dash and every panel: loaded when an app is made, not when a
    # command only reads the app's settings (`graphlab serve`'s parser imports `config`).
    if name == "create_app":
        from .factory import create_app
        return create_app
    raise AttributeError(f"module 'graphlab.app' has no attribute {name!r}")
