"""What the app tells about the shared storage's trouble: the error when Redis does not
answer, and a Redis URL safe to print.  Apart from ``shared_storage`` (which opens the Redis
cache) and ``redis_cache`` (which raises the error), so that redis_cache need not import
shared_storage, which imports it."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from compiler_core.errors import GraphLabError


class SharedCacheUnreachable(GraphLabError):
    """The shared storage (Redis) did not answer: the view says so and tries again by itself."""


def redacted(url: str) -> str:
    """The URL without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urlunsplit((parts.scheme, user + host, parts.path, parts.query, parts.fragment))
