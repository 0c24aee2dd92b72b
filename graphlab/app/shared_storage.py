"""Where the state every process of the app shares lives: uploads, the build board, finished
workspaces.  One machine keeps it in folders of the cache dir (diskcache: safe across the
gunicorn workers and builders of that machine); a cluster keeps it in Redis, which every
server and worker on any machine reaches (`serve --redis URL`).

A `SharedStorage` is a small picklable description, so a builder process or a Celery worker
opens the same caches as the server that started the build.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import diskcache

from compiler_core.errors import GraphLabError

CLUSTER_EXTRA = ('install the cluster extra: pip install ".[cluster]" in a GraphLab checkout '
                 '(it adds celery[redis] and redis)')


@dataclass(frozen=True)
class SharedStorage:
    directory: str                 # the one-machine caches (and local scratch in a cluster)
    redis_url: str | None = None   # set: every shared cache is in this Redis

    @property
    def clustered(self) -> bool:
        return self.redis_url is not None

    def cache(self, name: str, size_limit: int | None = None):
        """The cache ``name``: a diskcache.Cache, or its Redis counterpart with the same
        get / set(expire=) / in / transact() interface."""
        if self.redis_url is None:
            limits = {} if size_limit is None else {"size_limit": size_limit}
            return diskcache.Cache(os.path.join(self.directory, name), **limits)
        from .redis_cache import RedisCache

        return RedisCache(self.redis_url, name)

    def trouble(self) -> str | None:
        """Why the shared caches cannot be used right now (None: they can)."""
        if self.redis_url is None:
            return None
        from .redis_cache import ping

        return ping(self.redis_url)


def require_cluster_packages() -> None:
    """A clear refusal when `--redis` is asked for without the optional packages."""
    missing = [name for name in ("celery", "redis") if not _importable(name)]
    if missing:
        raise GraphLabError(f"--redis needs the Python package{'s' if len(missing) > 1 else ''} "
                            f"{' and '.join(missing)}, which {'are' if len(missing) > 1 else 'is'}"
                            f" not installed", hint=CLUSTER_EXTRA)


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None
