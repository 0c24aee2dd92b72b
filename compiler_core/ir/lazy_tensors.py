"""Weights where they lie: tensors read from their file only when a computation needs them.

A model's weights are byte ranges of files: its external data file, or the .onnx file itself
for weights stored inline.  The importer keeps each one as a ``StoredTensor`` (element type,
shape and where the bytes are); asking for its values maps the file (mmap) and hands out a
read-only view, so only the pages a computation touches are ever read, and what needs no
values (``info``, ``explain``, the app's graph views) reads none.  An uploaded model's weights
are ranges of the uploaded bytes in the same way.  Tensors that passes make are lazy too
where that saves copying most of a model (``computed_tensors``) or go to a scratch file when
large (``spill``).

Pages of a mapped file that a process touched count in its resident set until released, so
each time ``RELEASE_BYTES`` of values were handed out, every mapped file's pages are released
(a clean page of a file can be dropped and read again: no value ever changes), and a stream
(``chunks``, what the exporter writes) releases each chunk once written: a 16 GB model is read
and written with a few hundred MB resident.

Reads are counted (``watch_reads``), so tests can assert which tensors a command touched.
"""

from __future__ import annotations

import errno
import mmap
import os
import threading
import weakref
from contextlib import contextmanager
from typing import Iterator

import numpy as np
import onnx
from onnx import numpy_helper

from ..errors import GraphLabError
from .dtypes import element_bits, from_numpy, to_numpy

RELEASE_BYTES = 256 << 20      # values handed out between two releases of mapped pages
STREAM_CHUNK_BYTES = 64 << 20  # the exporter writes a stored tensor this much at a time


class MappedFile:
    """One file mapped read-only, shared by every tensor stored in it.

    Pickling sends the path (another process maps the same file again), checked on arrival
    against the file's identity when it was first opened, so a changed file is never read as
    if it were the old one.
    """

    _open: "weakref.WeakValueDictionary[tuple, MappedFile]" = weakref.WeakValueDictionary()
    _lock = threading.Lock()

    def __init__(self, path: str, identity: tuple, mapping: mmap.mmap | None):
        self.path, self.identity, self._map = path, identity, mapping
        self.size = identity[2]

    @classmethod
    def open(cls, path: str, identity: tuple | None = None) -> "MappedFile":
        """The file at ``path`` mapped (one mapping per file and process)."""
        path = os.path.realpath(path)
        with open(path, "rb") as handle:
            status = os.fstat(handle.fileno())
            found = (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)
            if identity is not None and tuple(identity) != found:
                raise StoredTensorError(
                    f"{path} changed on disk after the model was loaded", where=path,
                    hint="load the model again")
            with cls._lock:
                mapped = cls._open.get((path, found))
                if mapped is None:
                    mapping = (mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
                               if status.st_size else None)
                    mapped = cls(path, found, mapping)
                    cls._open[(path, found)] = mapped
        return mapped

    def buffer(self, offset: int, length: int) -> memoryview:
        if length == 0:
            return memoryview(b"")
        return memoryview(self._map)[offset:offset + length]

    def release(self, offset: int = 0, length: int | None = None) -> None:
        """Drop this process's copies of the file's pages (they are read again if needed)."""
        if self._map is None or not hasattr(mmap, "MADV_DONTNEED"):
            return
        start = offset - offset % mmap.PAGESIZE
        end = self.size if length is None else min(self.size, offset + length)
        if end > start:
            self._map.madvise(mmap.MADV_DONTNEED, start, end - start)

    def __reduce__(self):
        if _pickling.self_contained:
            return InMemory, (bytes(self._map) if self._map is not None else b"",)
        return MappedFile.open, (self.path, self.identity)

    @classmethod
    def release_all(cls) -> None:
        with cls._lock:
            mapped = list(cls._open.values())
        for item in mapped:
            item.release()


class _PicklingMode(threading.local):
    self_contained = False


_pickling = _PicklingMode()


@contextmanager
def self_contained_pickles(enabled: bool = True) -> Iterator[None]:
    """Within the block (this thread), a pickled tensor carries its file's bytes instead of the
    file's path: for a reader on another machine, which has not got the file."""
    before = _pickling.self_contained
    _pickling.self_contained = before or enabled
    try:
        yield
    finally:
        _pickling.self_contained = before


class InMemory:
    """Bytes already in memory (an upload) that tensors are ranges of; pickled by value."""

    def __init__(self, data: bytes):
        self.data = data
        self.size = len(data)

    def buffer(self, offset: int, length: int) -> memoryview:
        return memoryview(self.data)[offset:offset + length]

    def release(self, offset: int = 0, length: int | None = None) -> None:
        """Nothing to release: the bytes are this process's own."""


class LazyTensor:
    """A tensor whose values are produced only when asked for.

    It answers ``shape``, ``dtype``, ``nbytes``, ``size`` and ``ndim`` like an array, so code
    that only asks about a weight's size never reads it; ``numpy()`` gives the values,
    ``chunks()`` its bytes as ONNX's raw_data holds them, a piece at a time (for writing).
    """

    __slots__ = ("name", "elem_type", "shape", "__weakref__")

    def __init__(self, name: str, elem_type: int, shape: tuple[int, ...]):
        self.name, self.elem_type, self.shape = name, elem_type, tuple(int(d) for d in shape)

    @property
    def dtype(self) -> np.dtype:
        return to_numpy(self.elem_type)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        return (self.size * element_bits(self.elem_type) + 7) // 8

    @property
    def zero_copy(self) -> bool:
        """True when the raw bytes are the array's memory (not packed, not strings)."""
        return (self.elem_type != onnx.TensorProto.STRING
                and element_bits(self.elem_type) == self.dtype.itemsize * 8)

    def numpy(self) -> np.ndarray:
        raise NotImplementedError

    def chunks(self, size: int = STREAM_CHUNK_BYTES) -> Iterator[memoryview]:
        raise NotImplementedError

    def release(self) -> None:
        """Drop this process's copies of the pages the values were read from."""


class StoredTensor(LazyTensor):
    """A tensor whose bytes lie in a buffer: a range of a mapped file or of uploaded bytes."""

    __slots__ = ("source", "offset", "_nbytes")

    def __init__(self, name: str, elem_type: int, shape: tuple[int, ...],
                 source: "MappedFile | InMemory", offset: int, nbytes: int):
        super().__init__(name, elem_type, shape)
        self.source, self.offset, self._nbytes = source, offset, nbytes

    @property
    def nbytes(self) -> int:
        return self._nbytes

    def numpy(self, noted: bool = True) -> np.ndarray:
        """The values, read-only: a view of the mapped file (packed types are unpacked).
        ``noted=False``: the importer reading a small constant, not a computation."""
        if noted:
            _note_read(self)
        raw = self.source.buffer(self.offset, self.nbytes)
        if self.zero_copy:
            array = np.frombuffer(raw, dtype=self.dtype).reshape(self.shape)
        else:
            proto = onnx.TensorProto(data_type=self.elem_type, dims=self.shape,
                                     raw_data=bytes(raw))
            array = numpy_helper.to_array(proto)
        if array.flags.writeable:
            array.flags.writeable = False
        return array

    def end_bytes(self, elements: int) -> bytes:
        """The raw bytes of the first ``elements`` elements and of the last (each end the whole
        tensor when it is shorter), read like ``numpy()`` and without building an array: a
        fingerprint of many small weights (``cse``).  Only for ``zero_copy`` types, whose
        elements are their raw bytes."""
        _note_read(self)
        raw = self.source.buffer(self.offset, self.nbytes)
        length = min(len(raw), elements * self.dtype.itemsize)
        return bytes(raw[:length]) + bytes(raw[len(raw) - length:])

    def chunks(self, size: int = STREAM_CHUNK_BYTES) -> Iterator[memoryview]:
        """The stored bytes, a chunk at a time; each chunk's pages are released once the
        caller asks for the next (the exporter writes 16 GB with a few MB resident)."""
        _note_read(self, counted=False)
        for start in range(0, self.nbytes, size):
            length = min(size, self.nbytes - start)
            yield self.source.buffer(self.offset + start, length)
            self.source.release(self.offset + start, length)

    def release(self) -> None:
        self.source.release(self.offset, self.nbytes)

    def copy_into(self, handle) -> bool:
        """Append the bytes to the open file ``handle`` by the kernel (``os.copy_file_range``:
        none of them passes through this process); False where that cannot be done (then
        write ``chunks()``)."""
        source = self.source
        if not isinstance(source, MappedFile) or not hasattr(os, "copy_file_range") \
                or not self.nbytes:
            return False
        try:
            target = handle.fileno()
        except (AttributeError, OSError, ValueError):
            return False
        handle.flush()
        done = 0
        try:
            with open(source.path, "rb") as origin:
                status = os.fstat(origin.fileno())
                if (status.st_dev, status.st_ino) != tuple(source.identity[:2]):
                    return False    # replaced since it was mapped: the mapping has the data
                while done < self.nbytes:
                    copied = os.copy_file_range(origin.fileno(), target, self.nbytes - done,
                                                self.offset + done)
                    if not copied:
                        raise OSError(errno.EIO, f"{source.path} ended early")
                    done += copied
        except OSError as err:
            if done or err.errno not in _NO_KERNEL_COPY:
                raise
            return False
        handle.seek(0, os.SEEK_END)
        _note_read(self, counted=False)
        return True

    def __repr__(self) -> str:
        where = getattr(self.source, "path", "memory")
        return f"StoredTensor({self.name!r}, {list(self.shape)}, {where}@{self.offset})"


# copy_file_range errors that mean "not between these files": fall back to writing chunks.
_NO_KERNEL_COPY = {errno.EXDEV, errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EBADF}


class StoredTensorError(GraphLabError):
    """A stored tensor's file cannot be read as it was when the model was loaded."""


# ------------------------------------------------------------------------------ reading
_handed_out = 0
_watchers: list[list[str]] = []


def _note_read(tensor: StoredTensor, counted: bool = True) -> None:
    """Log the read for ``watch_reads``; ``counted``: the pages stay mapped after it (a
    stream releases its own as it goes)."""
    global _handed_out
    for watcher in _watchers:
        watcher.append(tensor.name)
    if not counted:
        return
    _handed_out += tensor.nbytes
    if _handed_out > RELEASE_BYTES:
        MappedFile.release_all()
        _handed_out = tensor.nbytes


@contextmanager
def watch_reads() -> Iterator[list[str]]:
    """Collect the names of the stored tensors whose values are asked for in the block."""
    names: list[str] = []
    _watchers.append(names)
    try:
        yield names
    finally:
        _watchers.remove(names)


def values_of(data: "np.ndarray | LazyTensor") -> np.ndarray:
    """An array's values, whether it is in memory or lazy."""
    return data.numpy() if isinstance(data, LazyTensor) else data


def data_elem_type(data: "np.ndarray | LazyTensor") -> int:
    """The ONNX element type of an array or a lazy tensor (without reading it)."""
    return data.elem_type if isinstance(data, LazyTensor) else from_numpy(data.dtype)
