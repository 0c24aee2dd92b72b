"""Weights a pass computes from others, computed only when read.

Horizontal fusion merges the query, key and value weights (and the gate and up projections)
of every layer; folding a Transpose into a tied embedding makes a transposed copy.  Done
eagerly, that copies most of a model's weights once more, in memory or in a scratch file;
kept as a recipe over the weights they come from, they cost nothing until the exporter writes
them (a block at a time for a concatenation) or a pass asks for their values.  They pickle as
the recipe, so the app's workspaces stay small.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from .dtypes import raw_bytes
from .lazy_tensors import STREAM_CHUNK_BYTES, LazyTensor, data_elem_type, values_of

STRIP_ROWS = 8  # rows of a matrix transposed at a time: the strip and its result stay in cache


class ComputedTensor(LazyTensor):
    """A lazy tensor computed from others."""

    __slots__ = ()

    def recipe(self) -> tuple:
        """What it is computed from and how: equal recipes give equal values (so duplicates
        are found without computing either)."""
        raise NotImplementedError


class ConcatenatedTensor(ComputedTensor):
    """Tensors side by side along one axis, concatenated only when read.

    Merging the query, key and value weights of every layer (horizontal fusion) would
    otherwise copy most of a model's weights once more, in memory or in a scratch file; this
    way the merged weight costs nothing until the exporter writes it, a block of rows at a
    time, straight from the weights it is made of.
    """

    __slots__ = ("parts", "axis")

    def __init__(self, name: str, parts: list["np.ndarray | LazyTensor"], axis: int):
        first = parts[0]
        axis = axis % len(first.shape)
        shape = list(first.shape)
        shape[axis] = sum(p.shape[axis] for p in parts)
        super().__init__(name, data_elem_type(first), tuple(shape))
        self.parts, self.axis = list(parts), axis

    def recipe(self) -> tuple:
        return ("concatenate", self.axis, tuple(id(p) for p in self.parts))

    def numpy(self) -> np.ndarray:
        array = np.concatenate([values_of(p) for p in self.parts], axis=self.axis)
        array.flags.writeable = False
        return array

    def chunks(self, size: int = STREAM_CHUNK_BYTES) -> Iterator[memoryview]:
        """Blocks of rows (the dims before ``axis``), each concatenated on its own."""
        rows = int(np.prod(self.shape[:self.axis], dtype=np.int64))
        flat = [values_of(p).reshape(rows, -1) for p in self.parts]
        step = max(1, size // max(1, self.nbytes // max(rows, 1)))
        for start in range(0, rows, step):
            block = np.concatenate([f[start:start + step] for f in flat], axis=1)
            yield raw_bytes(block)
            for part in self.parts:
                if isinstance(part, LazyTensor):
                    part.release()

    def release(self) -> None:
        for part in self.parts:
            if isinstance(part, LazyTensor):
                part.release()


class TransposedTensor(ComputedTensor):
    """A weight with its dims permuted, laid out contiguously when read."""

    __slots__ = ("source", "perm")

    def __init__(self, name: str, source: "np.ndarray | LazyTensor", perm: tuple[int, ...]):
        super().__init__(name, data_elem_type(source),
                         tuple(source.shape[p] for p in perm))
        self.source, self.perm = source, tuple(perm)

    def recipe(self) -> tuple:
        return ("transpose", self.perm, id(self.source))

    def numpy(self) -> np.ndarray:
        array = transpose_array(values_of(self.source), self.perm)
        array.flags.writeable = False
        return array

    def chunks(self, size: int = STREAM_CHUNK_BYTES) -> Iterator[memoryview]:
        data = raw_bytes(self.numpy())
        self.release()
        for start in range(0, data.nbytes, size):
            yield data[start:start + size]

    def release(self) -> None:
        if isinstance(self.source, LazyTensor):
            self.source.release()


def transpose_array(array: np.ndarray, perm: tuple[int, ...]) -> np.ndarray:
    """``np.transpose(array, perm)`` laid out contiguously.  A big matrix is transposed a
    strip of rows at a time: numpy's one strided copy misses the cache on every element and
    takes seconds for an embedding table."""
    if tuple(perm) != (1, 0):
        return np.ascontiguousarray(np.transpose(array, perm))
    out = np.empty(array.shape[::-1], array.dtype)
    for start in range(0, array.shape[0], STRIP_ROWS):
        out[:, start:start + STRIP_ROWS] = array[start:start + STRIP_ROWS].T
    return out
