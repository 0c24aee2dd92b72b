"""`--redis URL` (or GRAPHLAB_REDIS_URL), shared by `serve` and `worker`."""

from __future__ import annotations

import argparse
import os

from compiler_core.errors import GraphLabError

from ..app.shared_storage import require_cluster_packages

ENV = "GRAPHLAB_REDIS_URL"


def add_redis_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    parser.add_argument("--redis", metavar="URL", default=None,
                        help=f"{help_text} (default: ${ENV}; e.g. redis://host:6379/0)")


def redis_url(args: argparse.Namespace) -> str | None:
    """The Redis URL asked for, checked; None: one machine, no extra services."""
    url = args.redis or os.environ.get(ENV) or None
    if url is None:
        return None
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise GraphLabError(f"--redis {url!r} is not a Redis URL",
                            hint="write it as redis://HOST:PORT/DB, e.g. redis://127.0.0.1:6379/0")
    require_cluster_packages()
    return url
