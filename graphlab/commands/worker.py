"""`graphlab worker`: runs the builds of `graphlab serve --redis URL` (a Celery worker)."""

from __future__ import annotations

import os

from compiler_core.errors import GraphLabError

from ..app.cache_trouble import redacted
from .common import add_plugins_option
from .redis_option import ENV, add_redis_option, redis_url


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "worker", help="run the builds of `serve --redis URL` servers (any number, any machine)")
    add_redis_option(parser, "the Redis the servers use")
    parser.add_argument("--concurrency", type=int, default=os.cpu_count() or 1,
                        help="builds at once in this worker (default: the number of cores)")
    add_plugins_option(parser)   # what servers load travels with each build, too
    parser.set_defaults(run=run)


def run(args) -> int:
    url = redis_url(args)
    if url is None:
        raise GraphLabError("graphlab worker needs the Redis the servers use",
                            hint=f"give --redis redis://HOST:PORT/DB or set {ENV}")
    if args.concurrency < 1:
        raise GraphLabError("--concurrency must be at least 1")
    from ..app.cluster import run_worker
    from ..app.redis_cache import ping

    trouble = ping(url)
    if trouble:
        raise GraphLabError(trouble)
    print(f"GraphLab build worker on {redacted(url)}, {args.concurrency} at once "
          f"(Ctrl+C stops it)", flush=True)
    run_worker(url, args.concurrency)
    return 0
