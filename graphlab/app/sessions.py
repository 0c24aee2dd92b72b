"""Per-browser state that must survive across server processes: uploaded models.

Every upload is stored on disk (diskcache: safe across gunicorn workers) under a random,
unguessable token that only the uploading browser holds (in its session storage).  Nothing
lists the uploads, so one user's model is invisible to everyone else; entries expire.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

import diskcache

from compiler_core.errors import GraphLabError

_TOKEN_BYTES = 24


@dataclass(frozen=True)
class Upload:
    token: str
    filename: str
    digest: str   # sha256 of the bytes: the key of content-addressed caches
    data: bytes


class SessionStore:
    def __init__(self, directory: str, ttl_seconds: int, size_limit: int = 4 << 30):
        self._cache = diskcache.Cache(directory, size_limit=size_limit)
        self._ttl = ttl_seconds

    def save_upload(self, filename: str, data: bytes) -> Upload:
        upload = Upload(secrets.token_urlsafe(_TOKEN_BYTES), filename,
                        hashlib.sha256(data).hexdigest(), data)
        self._cache.set(("upload", upload.token),
                        {"filename": filename, "digest": upload.digest, "data": data},
                        expire=self._ttl)
        return upload

    def load_upload(self, token: str) -> Upload:
        entry = self._cache.get(("upload", token)) if token else None
        if entry is None:
            raise GraphLabError("this uploaded model is no longer available here",
                                hint="uploads are kept for a day and only for the browser "
                                     "that sent them; upload the file again")
        return Upload(token, entry["filename"], entry["digest"], entry["data"])
