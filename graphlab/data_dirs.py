"""Where the data folders that ship with GraphLab live (assets, sample models).

An installed GraphLab carries them as the packages ``graphlab.assets`` and
``graphlab.sample_models``; a source checkout that is not installed has them at the top of the
repository (``assets/``, ``sample_models/``).  Both layouts work.
"""

from __future__ import annotations

import os
from importlib import resources

_CHECKOUT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def data_dir(package: str, checkout_folder: str) -> str:
    """The folder of ``graphlab.<package>``, or ``<checkout>/<checkout_folder>``."""
    try:
        return str(resources.files(f"graphlab.{package}"))
    except ModuleNotFoundError:
        return os.path.join(_CHECKOUT_ROOT, checkout_folder)


def assets_dir() -> str:
    return data_dir("assets", "assets")


def samples_dir() -> str:
    return data_dir("sample_models", "sample_models")
