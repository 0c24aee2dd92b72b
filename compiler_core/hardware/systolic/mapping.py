"""How a GEMM (M x K) . (K x N) is laid onto an R x C systolic array, fold by fold.

The dataflow decides which GEMM dimension runs along the array's rows, which along its
columns, and which is streamed through in time (SCALE-Sim's mapping):

    dataflow              rows  cols  streamed (T)   stationary in the PEs
    os  output-stationary  M     N     K              the C (output) tile
    ws  weight-stationary  K     N     M              the B (weight) tile
    is  input-stationary   K     M     N              the A (input) tile

A dimension longer than the array is cut into folds: row_folds = ceil(rows_dim / R),
col_folds = ceil(cols_dim / C), folds = row_folds * col_folds, run one after another with the
column fold outer and the row fold inner (fold k = col_fold * row_folds + row_fold), as
SCALE-Sim orders them. An edge fold uses only part of the array; its other PEs are padding.
A convolution is the im2col GEMM: M = OH*OW, K = FH*FW*Cin, N = filters, with the unpadded
output size OH = ceil((H - FH + S) / S) (pad the input yourself for a padded layer).
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass

from compiler_core.cached import cached
from compiler_core.errors import GraphLabError

DATAFLOW_MEANINGS = {"os": "output-stationary", "ws": "weight-stationary",
                     "is": "input-stationary"}
DATAFLOWS = tuple(DATAFLOW_MEANINGS)
_LAYOUT = {"os": ("M", "N", "K"), "ws": ("K", "N", "M"), "is": ("K", "M", "N")}
_STATIONARY = {"os": "C", "ws": "B", "is": "A"}
OPERAND_DIMS = {"A": ("M", "K"), "B": ("K", "N"), "C": ("M", "N")}


class ScheduleError(GraphLabError, ValueError):
    """A GEMM, convolution, array or option the simulator cannot schedule."""


def positive_int(name: str, value) -> int:
    """`value` as an int, or a ScheduleError saying `name` must be a positive whole number."""
    if type(value) is int and value > 0:    # the common case, tested first: a layer has ~14
        return value
    try:
        if isinstance(value, bool):
            raise TypeError
        number = operator.index(value)
    except TypeError:
        raise ScheduleError(f"{name} must be a positive whole number, got {value!r}",
                            where=name, hint="pass an int such as 64") from None
    if number <= 0:
        raise ScheduleError(f"{name} must be positive, got {number}", where=name,
                            hint="every dimension and the stride must be at least 1")
    return number


def checked_choice(option: str, value, meanings: dict[str, str], *, what: str = "") -> str:
    """`value` in lower case when it is one of `meanings` (choice -> what it means), or a
    ScheduleError that names the `option` and lists the choices: the one check of every
    option the simulator takes by name (the dataflow, the timing model)."""
    key = str(value).strip().lower()
    if key not in meanings:
        choices = [f"'{choice}' ({meaning})" for choice, meaning in meanings.items()]
        raise ScheduleError(f"unknown {what or option} {value!r}", where=option,
                            hint=f"use {', '.join(choices[:-1])} or {choices[-1]}")
    return key


@dataclass(frozen=True)
class Gemm:
    """(M x K) . (K x N) = (M x N); one multiply-accumulate per (m, n, k)."""

    M: int
    N: int
    K: int

    def __post_init__(self):
        for name in ("M", "N", "K"):
            object.__setattr__(self, name, positive_int(name, getattr(self, name)))

    @property
    def macs(self) -> int:
        return self.M * self.N * self.K


@dataclass(frozen=True)
class ConvShape:
    """A convolution layer in SCALE-Sim's terms (no padding, square stride)."""

    H: int
    W: int
    FH: int
    FW: int
    C: int
    N: int
    S: int

    def __post_init__(self):
        for name in ("H", "W", "FH", "FW", "C", "N", "S"):
            object.__setattr__(self, name, positive_int(name, getattr(self, name)))
        if self.FH > self.H or self.FW > self.W:
            raise ScheduleError(
                f"filter {self.FH}x{self.FW} is bigger than the input {self.H}x{self.W}",
                where="FH/FW", hint="the layer is unpadded: pass the padded input size "
                                    "(H + 2*pad) if the layer pads")

    @property
    def OH(self) -> int:
        return math.ceil((self.H - self.FH + self.S) / self.S)

    @property
    def OW(self) -> int:
        return math.ceil((self.W - self.FW + self.S) / self.S)

    def gemm(self) -> Gemm:
        """The im2col GEMM: one row per output pixel, one column per filter."""
        return Gemm(M=self.OH * self.OW, N=self.N, K=self.FH * self.FW * self.C)


@dataclass(frozen=True)
class FoldBlock:
    """Folds with rows in [row_lo, row_hi] of groups [group_lo, group_hi] (both inclusive).

    Every fold in a block has the same tile sizes, the same data to fetch and store and so
    the same timing; totals and prefix sums over all folds cost one term per block.
    """

    row_lo: int
    row_hi: int
    group_lo: int
    group_hi: int
    row_folds: int

    @property
    def size(self) -> int:
        return (self.row_hi - self.row_lo + 1) * (self.group_hi - self.group_lo + 1)

    @property
    def first_fold(self) -> int:
        return self.group_lo * self.row_folds + self.row_lo

    def count_before(self, fold: int) -> int:
        """How many of this block's folds come before fold index `fold`."""
        group, row = divmod(fold, self.row_folds)
        rows = self.row_hi - self.row_lo + 1
        whole_groups = max(0, min(group, self.group_hi + 1) - self.group_lo)
        count = whole_groups * rows
        if self.group_lo <= group <= self.group_hi:
            count += max(0, min(row, self.row_hi + 1) - self.row_lo)
        return count


@dataclass(frozen=True)
class Mapping:
    """A GEMM on an R x C array under one dataflow: the folds and what each one covers.

    Its layout is worked out once, on construction, since every schedule reads all of it:
    `row_dim`, `col_dim` and `stream_dim` (the GEMM dims along the rows, the columns and
    time), `stream_length` (T), `row_folds`, `col_folds` and `folds`.
    """

    gemm: Gemm
    rows: int
    cols: int
    dataflow: str

    def __post_init__(self):
        object.__setattr__(self, "rows", positive_int("rows", self.rows))
        object.__setattr__(self, "cols", positive_int("cols", self.cols))
        object.__setattr__(self, "dataflow",
                           checked_choice("dataflow", self.dataflow, DATAFLOW_MEANINGS))
        self.__dict__.update(self._layout())

    def _layout(self) -> dict:
        """The layout's attributes, set in one step (plain attributes, not fields: they
        follow from the fields, and a cached property would cost a call on its first
        read)."""
        gemm, (row_dim, col_dim, stream_dim) = self.gemm, _LAYOUT[self.dataflow]
        row_extent, col_extent = getattr(gemm, row_dim), getattr(gemm, col_dim)
        row_folds, col_folds = -(-row_extent // self.rows), -(-col_extent // self.cols)
        return {"row_dim": row_dim, "col_dim": col_dim, "stream_dim": stream_dim,
                "stream_length": getattr(gemm, stream_dim), "_row_extent": row_extent,
                "_col_extent": col_extent, "row_folds": row_folds, "col_folds": col_folds,
                "folds": row_folds * col_folds}

    @property
    def stationary_operand(self) -> str:
        """The operand whose tile stays in the PEs during a fold: 'C', 'B' or 'A'."""
        return _STATIONARY[self.dataflow]

    def extent(self, dim: str) -> int:
        return getattr(self.gemm, dim)

    @cached
    def mapping_efficiency(self) -> float:
        """Useful PE-slots / all PE-slots over the folds (1.0 when both dims divide)."""
        used = self._row_extent * self._col_extent
        return used / (self.folds * self.rows * self.cols)

    def check_fold(self, fold: int) -> int:
        fold = operator.index(fold)
        if not 0 <= fold < self.folds:
            raise ScheduleError(f"fold {fold} does not exist", where="fold",
                                hint=f"folds are numbered 0 to {self.folds - 1}")
        return fold

    def fold_position(self, fold: int) -> tuple[int, int]:
        """(row_fold, col_fold) of a fold index."""
        group, row = divmod(self.check_fold(fold), self.row_folds)
        return row, group

    def rows_used(self, row_fold: int) -> int:
        return min(self.rows, self._row_extent - row_fold * self.rows)

    def cols_used(self, col_fold: int) -> int:
        return min(self.cols, self._col_extent - col_fold * self.cols)

    def dim_range(self, dim: str, row_fold: int, col_fold: int) -> tuple[int, int]:
        """Half-open [start, stop) of `dim` that a fold covers."""
        if dim == self.row_dim:
            start = row_fold * self.rows
            return start, start + self.rows_used(row_fold)
        if dim == self.col_dim:
            start = col_fold * self.cols
            return start, start + self.cols_used(col_fold)
        return 0, self.extent(dim)

    @cached
    def tile_factors(self) -> dict[str, tuple[bool, bool, int]]:
        """Per operand: whether its tile spans the row dim, the column dim, and the
        product of its other dims (whole in every fold): the row, column and stream dims
        are M, N and K in some order, so that is T where the operand spans the stream
        dim, else 1."""
        row, col, stream, length = self.row_dim, self.col_dim, self.stream_dim, \
            self.stream_length
        return {operand: (row in dims, col in dims, length if stream in dims else 1)
                for operand, dims in OPERAND_DIMS.items()}

    def tile_elements(self, operand: str, row_fold: int, col_fold: int) -> int:
        """Elements of operand 'A', 'B' or 'C' that one fold touches."""
        on_rows, on_cols, count = self.tile_factors[operand]
        if on_rows:
            count *= self.rows_used(row_fold)
        if on_cols:
            count *= self.cols_used(col_fold)
        return count

    def operand_tiles(self, fold: int) -> dict[str, dict[str, list[int]]]:
        """Each operand's tile in a fold: {"A": {"rows": [m0, m1], "cols": [k0, k1]}, ...}."""
        row_fold, col_fold = self.fold_position(fold)
        tiles = {}
        for operand, (row_dim, col_dim) in OPERAND_DIMS.items():
            tiles[operand] = {"rows": list(self.dim_range(row_dim, row_fold, col_fold)),
                              "cols": list(self.dim_range(col_dim, row_fold, col_fold))}
        return tiles

    @cached
    def fold_blocks(self) -> tuple[FoldBlock, ...]:
        """The folds split into blocks of identical folds (at most nine; see FoldBlock).

        Row folds split into {0}, {1 .. R-2}, {last}; column folds into {0}, {1 .. C-2},
        {last}. The first and the last fold are always blocks of their own.
        """
        row_classes = _edge_classes(self.row_folds)
        group_classes = _edge_classes(self.col_folds)
        return tuple(FoldBlock(r_lo, r_hi, g_lo, g_hi, self.row_folds)
                     for g_lo, g_hi in group_classes for r_lo, r_hi in row_classes)


def _edge_classes(count: int) -> list[tuple[int, int]]:
    """[0, count) as inclusive ranges: the first, the middle ones, the last (empty dropped)."""
    if count == 1:
        return [(0, 0)]
    classes = [(0, 0)]
    if count > 2:
        classes.append((1, count - 2))
    classes.append((count - 1, count - 1))
    return classes
