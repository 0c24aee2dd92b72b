"""Large tensors that passes compute go to a scratch file, not to memory.

A folded or quantized weight of a big model would otherwise sit in memory beside the weights
it came from.  ``keep`` writes every such tensor of ``spill_bytes()`` or more to a file of its
own in a scratch folder and hands back a ``StoredTensor`` mapped from it: read only when
needed, like the model's own weights.  The file is deleted when nothing refers to the tensor
any more, so nothing unreachable from a kept snapshot is kept, on disk either.  Work whose
results other processes read by pickle (the app's builds) spills into a shared folder instead
(``spilling_into``), whose owner cleans it.
"""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import tempfile
import threading
import weakref
from contextlib import contextmanager
from typing import Iterator

import numpy as np

from .dtypes import element_bits, from_numpy, raw_bytes
from .lazy_tensors import LazyTensor, MappedFile, StoredTensor

DEFAULT_SPILL_BYTES = 16 << 20


def spill_bytes() -> int:
    """Tensors made by passes at least this large go to a scratch file
    (``GRAPHLAB_SPILL_BYTES`` overrides the default of 16 MiB)."""
    override = os.environ.get("GRAPHLAB_SPILL_BYTES")
    return int(override) if override else DEFAULT_SPILL_BYTES


class _Scratch:
    """Where spilled tensors go: this process's private folder (deleted at exit), or, inside
    ``spilling_into``, a folder other processes read them from, such as the app's cache."""

    def __init__(self):
        self.private: str | None = None
        self.shared: list[str] = []     # innermost last
        self._counter = itertools.count()
        self._lock = threading.Lock()

    def new_path(self) -> tuple[str, bool]:
        """A fresh file name, and whether the file is shared (kept when unreferenced)."""
        with self._lock:
            if self.shared:
                folder = self.shared[-1]
            else:
                if self.private is None:
                    self.private = tempfile.mkdtemp(prefix="graphlab-scratch-",
                                                    dir=os.environ.get("GRAPHLAB_SCRATCH_DIR"))
                    atexit.register(shutil.rmtree, self.private, True)
                folder = self.private
            os.makedirs(folder, exist_ok=True)
            name = f"{os.getpid()}-{next(self._counter)}-{os.urandom(4).hex()}.tensor"
            return os.path.join(folder, name), bool(self.shared)


_scratch = _Scratch()


@contextmanager
def spilling_into(folder: str) -> Iterator[None]:
    """Within the block, spill into ``folder`` and keep the files there (whoever owns the
    folder removes them): for work whose results other processes unpickle."""
    with _scratch._lock:
        _scratch.shared.append(folder)
    try:
        yield
    finally:
        with _scratch._lock:
            _scratch.shared.remove(folder)


def keep(array: "np.ndarray | LazyTensor", name: str = "") -> "np.ndarray | LazyTensor":
    """How a tensor a pass made is kept: read-only in memory, or, from ``spill_bytes()`` up,
    written to a scratch file and stored there (a lazy tensor is kept as it is)."""
    if isinstance(array, LazyTensor):
        return array
    array = np.asarray(array)
    if array.nbytes < spill_bytes() or array.dtype.kind not in "biufc" or \
            element_bits(from_numpy(array.dtype)) != array.dtype.itemsize * 8:
        if array.flags.writeable:
            array = array.copy()
            array.flags.writeable = False
        return array
    path, shared = _scratch.new_path()
    with open(path, "wb") as handle:
        handle.write(raw_bytes(array))
    mapped = MappedFile.open(path)
    if not shared:
        weakref.finalize(mapped, _remove, path)
    return StoredTensor(name or "spilled", from_numpy(array.dtype), array.shape, mapped, 0,
                        array.nbytes)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
