"""Layouts computed once per model and kept: every group's layer order (the expensive part of
a layout, `nested_layout`), on disk in the app's cache dir, by the content it was computed
from (`NestedLayout.content_key`: the pipeline's graph, its groups, the layout's version).

A build (in a builder process) completes its workspace's layout here: it adopts the orders
another build of the same content left, or computes every group's order and leaves them for
the next.  The same model under other sizes, another target or another preset whose passes
leave the same graphs is laid out once; and the server's processes never compute an order
while answering a click, since every group's order travels with the workspace.
"""

from __future__ import annotations

import os

import diskcache

from .nested_layout import NestedLayout

STORE_BYTES = 1 << 30
KEPT_SECONDS = 7 * 24 * 3600


class LayoutStore:
    def __init__(self, cache_dir: str):
        self.cache = diskcache.Cache(os.path.join(cache_dir, "layouts"), size_limit=STORE_BYTES)

    def complete(self, layout: NestedLayout) -> bool:
        """Give ``layout`` every group's order; True when they came from the store."""
        key = layout.content_key()
        orders = self.cache.get(key)
        if orders is not None:
            layout.adopt(orders)
            return True
        self.cache.set(key, layout.orders, expire=KEPT_SECONDS)
        return False
