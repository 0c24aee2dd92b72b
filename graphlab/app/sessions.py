"""Per-browser state that must survive across server processes (and machines): uploaded models.

An upload's bytes are stored once by their sha256 (two students uploading the same file share
one copy, and a builder anywhere reads the model by that digest); the browser gets a random,
unguessable token naming its upload, which only it holds (in its session storage).  Nothing
lists the uploads, so one user's model is invisible to everyone else; entries expire.  Both
live in the shared storage: the cache dir on one machine, Redis in a cluster (an upload is at
most `serve --max-upload-mb`, far below Redis's 512 MB per value, and Redis is the one
service every server and worker already reaches — no shared file system to set up).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from compiler_core.errors import GraphLabError

from .shared_storage import SharedStorage

_TOKEN_BYTES = 24
UPLOADS = "uploads"     # the shared cache that holds them
UPLOAD_BYTES = 4 << 30  # kept on one machine's disk (oldest go first)


@dataclass(frozen=True)
class Upload:
    token: str
    filename: str
    digest: str   # sha256 of the bytes: the key of content-addressed caches


class SessionStore:
    def __init__(self, storage: SharedStorage, ttl_seconds: int):
        self.storage = storage
        self._cache = storage.cache(UPLOADS, size_limit=UPLOAD_BYTES)
        self._ttl = ttl_seconds

    def save_upload(self, filename: str, data: bytes) -> Upload:
        upload = Upload(secrets.token_urlsafe(_TOKEN_BYTES), filename,
                        hashlib.sha256(data).hexdigest())
        self._cache.set(("blob", upload.digest), data, expire=self._ttl)
        self._cache.set(("upload", upload.token),
                        {"filename": filename, "digest": upload.digest}, expire=self._ttl)
        return upload

    def load_upload(self, token: str) -> Upload:
        entry = self._cache.get(("upload", token)) if token else None
        if entry is None:
            raise GraphLabError("this uploaded model is no longer available here",
                                hint="uploads are kept for a day and only for the browser "
                                     "that sent them; upload the file again")
        return Upload(token, entry["filename"], entry["digest"])


def read_upload_bytes(storage: SharedStorage, digest: str, filename: str) -> bytes:
    """An upload's bytes by content, wherever this runs (a server, a builder, a worker)."""
    data = storage.cache(UPLOADS, size_limit=UPLOAD_BYTES).get(("blob", digest))
    if data is None:
        raise GraphLabError(f"{filename} is no longer stored", hint="upload it again")
    return data
