"""The part of diskcache.Cache's interface the app uses (get, set with expire, in,
transact), kept in Redis so servers and workers on several machines share it.

Values are pickled, as diskcache does: Redis holds workspaces the servers unpickle, so it must
be reachable only by the cluster's own processes (docs/serving.md).  A Redis that cannot be
reached is a `SharedCacheUnreachable` — a user message, never a server error — and redis-py
reconnects by itself on the next call, so the app recovers when Redis returns.
"""

from __future__ import annotations

import pickle
from contextlib import contextmanager
from functools import lru_cache
from typing import Iterator

import redis

from .cache_trouble import SharedCacheUnreachable, redacted

PREFIX = "graphlab"
LOCK_SECONDS = 10      # a claim holds the board this long at most
IO_SECONDS = 30        # a workspace of a big model takes a while to move


def unreachable(url: str, err: Exception) -> SharedCacheUnreachable:
    return SharedCacheUnreachable(
        f"the shared cache at {redacted(url)} cannot be reached ({err})",
        hint="the page tries again by itself; if this lasts, check that redis-server runs and "
             "that this server can reach it")


@lru_cache(maxsize=8)
def client(url: str) -> redis.Redis:
    """One connection pool per URL and process (redis-py reconnects after an outage)."""
    return redis.Redis.from_url(url, socket_timeout=IO_SECONDS, socket_connect_timeout=2,
                                health_check_interval=15)


def ping(url: str) -> str | None:
    """None when Redis answers, else the message every view shows."""
    try:
        client(url).ping()
        return None
    except redis.RedisError as err:
        return str(unreachable(url, err))


@contextmanager
def reaching(url: str) -> Iterator[None]:
    """Redis's connection errors as the user message."""
    try:
        yield
    except (redis.ConnectionError, redis.TimeoutError) as err:
        raise unreachable(url, err) from err


class RedisCache:
    """One named cache (its keys start with ``graphlab:NAME:``)."""

    def __init__(self, url: str, name: str):
        self.url = url
        self.name = name

    def __reduce__(self):   # travels to builders as its address, never as a connection
        return (RedisCache, (self.url, self.name))

    def _key(self, key) -> str:
        parts = key if isinstance(key, tuple) else (key,)
        return ":".join((PREFIX, self.name, *map(str, parts)))

    def get(self, key, default=None):
        with reaching(self.url):
            raw = client(self.url).get(self._key(key))
        return default if raw is None else pickle.loads(raw)

    def set(self, key, value, expire: float | None = None) -> bool:
        seconds = None if expire is None else max(1, int(round(expire)))
        with reaching(self.url):
            return bool(client(self.url).set(self._key(key), pickle.dumps(value, protocol=5),
                                             ex=seconds))

    def __contains__(self, key) -> bool:
        with reaching(self.url):
            return bool(client(self.url).exists(self._key(key)))

    def delete(self, key) -> bool:
        with reaching(self.url):
            return bool(client(self.url).delete(self._key(key)))

    @contextmanager
    def transact(self) -> Iterator[None]:
        """Mutual exclusion across every process of the cluster (a Redis lock)."""
        with reaching(self.url):
            lock = client(self.url).lock(self._key("lock"), timeout=LOCK_SECONDS,
                                         blocking_timeout=LOCK_SECONDS)
            with lock:
                yield
