"""Files the app keeps in its cache dir beside its stores: tensors that builds spill (every
process that unpickles a workspace maps them) and large model downloads (model and weights,
two files).  They are removed once older than the stores keep anything, plus a margin."""

from __future__ import annotations

import os
import shutil
import time

TENSORS = "tensors"
DOWNLOADS = "downloads"
MARGIN_SECONDS = 3600   # a build runs before its workspace is stored: files are a bit older


def cache_folder(cache_dir: str, kind: str) -> str:
    folder = os.path.join(cache_dir, kind)
    os.makedirs(folder, exist_ok=True)
    return folder


def prune(folder: str, ttl_seconds: float) -> None:
    """Remove the entries of ``folder`` older than ``ttl_seconds`` and the margin."""
    oldest = time.time() - ttl_seconds - MARGIN_SECONDS
    for entry in os.scandir(folder):
        try:
            if entry.stat(follow_symlinks=False).st_mtime >= oldest:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
        except OSError:
            pass   # another process removed it first
