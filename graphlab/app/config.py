"""Settings of one running app: what `graphlab serve` passes to the app factory."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field

DEFAULT_MODEL = "cnn_bn"          # small enough to read on a projector, and BatchNorm folds
DEFAULT_UPLOAD_LIMIT = 256 << 20  # bytes


@dataclass(frozen=True)
class AppConfig:
    default_model: str = DEFAULT_MODEL
    extra_model_path: str | None = None    # a file given with `serve --model PATH`
    cache_dir: str = field(default_factory=lambda: os.path.join(tempfile.gettempdir(),
                                                                "graphlab-sessions"))
    upload_limit: int = DEFAULT_UPLOAD_LIMIT
    upload_ttl_seconds: int = 24 * 3600
    group_budget: int = 250   # drawn items per pane before scope groups start collapsed
    # The view a page opens on when its URL names none, written as the URL writes it
    # ("?pipeline=O1&bind=batch%3D1"); its model is the one above.
    first_view: str = ""
    allow_code: bool = False  # `serve --allow-code`: a browser may name Python modules to load
