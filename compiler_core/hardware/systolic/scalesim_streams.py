"""What the array asks of each SRAM, cycle by cycle, in SCALE-Sim 3.0.0's own layout.

SCALE-Sim describes a layer as three address matrices (ifmap M x K, filter K x N, ofmap
M x N; a GEMM is a conv with an M x K input and N filters of 1 x K) and derives from them:

* demand streams: for each operand, the addresses the array reads (or writes) at every cycle
  of every fold. Folds run column fold outer, row fold inner, each the same number of cycles
  (R + C + K - 2 for os, 2R + C + T - 2 for ws/is). Inside a fold an operand's tile is padded
  to the array's edge with -1 ("no request") and either skewed (the element at (t, c) is asked
  for at cycle base + t + c: streamed operands) or not (base + t: the tile preloaded into the
  PEs, whose rows are read bottom first);
* prefetch orders: the order in which an operand's addresses are brought into its SRAM. Every
  row fold's (or column fold's) tile is stacked, then read along anti-diagonals (rows from the
  bottom within a diagonal) or row by row, as SCALE-Sim's `systolic_compute_*` modules do;
* request counts as its report prints them, including its quirk for os, where every fold adds
  R + C to the ofmap writes.

Everything is built with whole-array numpy operations; nothing is walked cycle by cycle.
The streams are kept per distinct tile (folds re-reading a tile share it), a streamed tile's
requests are its part of the fill order (so one anti-diagonal pass gives both), the ofmap
writes per row are a closed form per tile shape, and a read operand's stream is built only
when its SRAM can miss and its layout does not give its positions (`ReadOperand`: a tile
whose addresses sit in one place each is known by arithmetic, `StreamedTiles` and
`PreloadedTiles`).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import accumulate, repeat
from operator import itemgetter, sub

import numpy as np

from compiler_core.cached import cached
from compiler_core.hardware.systolic.mapping import ConvShape, Mapping

NO_REQUEST = -1


@dataclass(frozen=True)
class OperandStreams:
    """One read operand's demand stream over its distinct tiles, named by fill order.

    The operand's addresses are brought into its SRAM in a fill order (SCALE-Sim cuts it
    into lines padding included); a request is named by its element's position in that order
    once the padding is dropped. Fold f reads tile `fold_tile[f]`; tile t's requests are
    `positions[a:b]` at the fold's local cycle rows `rows[a:b]`, with a, b = `tile_start[t]`,
    `tile_start[t + 1]`, in request order (by cycle row, then array column). Folds that read
    the same tile (SCALE-Sim re-reads an operand's row or column tiles) share it, so the
    work is per distinct tile, not per fold. The addresses themselves matter only where one
    address can sit at several positions (`may_share`: im2col inputs of overlapping
    windows); `fill_order()` gives them, NO_REQUEST kept, when asked."""

    fold_tile: list
    tile_start: list
    rows: np.ndarray
    positions: np.ndarray
    may_share: bool
    fill_order: Callable[[], np.ndarray] = field(repr=False, compare=False)

    @cached
    def addresses(self) -> np.ndarray:
        """The address at each position of the fill order."""
        prefetch = self.fill_order()
        return prefetch[prefetch != NO_REQUEST]

    def _tile(self, t: int) -> slice:
        return slice(self.tile_start[t], self.tile_start[t + 1])

    def global_rows(self, fold_rows: int) -> np.ndarray:
        """The cycle row of every request of the whole layer, in request order."""
        return np.concatenate([self.rows[self._tile(t)] + f * fold_rows
                               for f, t in enumerate(self.fold_tile)])

    def request_addresses(self) -> np.ndarray:
        """The address of every request of the whole layer, in request order."""
        return self.addresses[np.concatenate([self.positions[self._tile(t)]
                                              for t in self.fold_tile])]


@dataclass(frozen=True)
class PreloadedTiles:
    """A preloaded operand whose every address sits at one place of its fill order, known
    by its layout alone: fold f = (slice s, row block b) = divmod(f, blocks) reads rows
    k = min(K, bR + R) - 1 down to bR of slice s, one a cycle (local cycle row
    bR + R - 1 - k), and row k of slice s fills the positions s*K*C + k*w .. s*K*C + k*w +
    w - 1, w being the slice's width (C, the last slice's `last_width`)."""

    K: int
    R: int
    C: int
    blocks: int
    slices: int
    last_width: int


class StreamedTiles:
    """A streamed operand whose every address sits at one place of its fill order, known
    by its layout: the source's `count` tiles of `width` columns (the last one `used`
    wide), each `height` rows, stacked into `count * height` rows and filled along
    anti-diagonals, column ascending within one. Fold f reads tile t = `fold_tile[f]`,
    stacked rows [t*height, (t+1)*height): its requests are its cells in fill order, the
    cell on anti-diagonal d asked at local row `base` + d - t*height. A cell's position is
    the valid cells on the anti-diagonals before its own (`starts`; the padding past the
    last tile's `used` columns is no position) plus those before it on its own."""

    __slots__ = ("height", "width", "count", "used", "base", "fold_tile", "starts")

    def __init__(self, height: int, width: int, count: int, used: int, base: int,
                 fold_tile: list):
        self.height, self.width, self.count, self.used = height, width, count, used
        self.base, self.fold_tile, self.starts = base, fold_tile, None

    def prepare(self) -> None:
        """Count `starts`, the position of each anti-diagonal's first valid cell (and the
        total last), before any position is asked for: the stacked matrix's diagonal
        lengths rise by one to its narrow side, stay, fall back, less the padded corner's
        (rows of the last tile, columns from `used`), the same shape shifted."""
        if self.starts is not None:
            return
        lengths = _diagonal_lengths(self.count * self.height, self.width)
        if self.used < self.width:
            corner = (self.count - 1) * self.height + self.used
            padded = _diagonal_lengths(self.height, self.width - self.used)
            end = corner + len(padded)
            lengths[corner:end] = map(sub, lengths[corner:end], padded)
        self.starts = list(accumulate(lengths, initial=0))

    def position(self, d: int, c: int) -> int:
        """The fill position of the valid cell in column c of anti-diagonal d."""
        low = d - self.count * self.height + 1          # the diagonal's bottom column
        if low < 0:
            low = 0
        position = self.starts[d] + c - low
        used = self.used
        if used < self.width:                           # padded cells before it on d
            end = d - (self.count - 1) * self.height + 1
            padded = (c if c < end else end) - (used if used > low else low)
            if padded > 0:
                position -= padded
        return position

    def first_position(self, t: int) -> int:
        return self.starts[t * self.height]

    def last_position(self, t: int) -> int:
        width = self.width if t < self.count - 1 else self.used
        return self.position(t * self.height + self.height + width - 2, width - 1)

    def next_request(self, t: int, x: int) -> tuple[int, int] | None:
        """(position, local row) of tile t's first request at or past position x, or
        None: on x's anti-diagonal the tile's cells hold consecutive positions (its
        columns [a, b]), so it is there or the next diagonal's first."""
        height, top, starts = self.height, t * self.height, self.starts
        d = bisect_right(starts, x) - 1
        if d < top:
            return starts[top], self.base
        width = self.width if t < self.count - 1 else self.used
        last = top + height + width - 2
        if d > last:
            return None
        a = d - top - height + 1
        if a < 0:
            a = 0
        first = self.position(d, a)
        if x <= first:
            return first, self.base + d - top
        b = d - top
        if b >= width:
            b = width - 1
        if x <= first + b - a:
            return x, self.base + d - top
        d += 1
        if d > last:
            return None
        a = d - top - height + 1
        return self.position(d, a if a > 0 else 0), self.base + d - top


def _diagonal_lengths(height: int, width: int) -> list[int]:
    """The lengths of a height x width matrix's anti-diagonals, in order."""
    side = min(height, width)
    return [*range(1, side), *repeat(side, height + width + 1 - 2 * side),
            *range(side - 1, 0, -1)]


class ReadOperand:
    """A read operand as SCALE-Sim's read SRAM sees it: how many addresses its fill order
    holds (`valid`) and its length padding included (`fill_length`), the cycle rows of its
    first and last request (`first_last`), and its demand stream (`streams`), built only
    when asked: an SRAM whose window spans the whole fill order never misses, so most small
    layers need no stream at all; an operand with one place per address is read from its
    layout (`preloaded` or `streamed`) and needs none either."""

    def __init__(self, valid: int, fill_length: int, first_last: tuple[int, int], build,
                 preloaded: PreloadedTiles | None = None,
                 streamed: StreamedTiles | None = None):
        self.valid, self.fill_length, self.first_last = valid, fill_length, first_last
        self._build, self.preloaded, self.streamed = build, preloaded, streamed

    @cached
    def streams(self) -> OperandStreams:
        return self._build()


class OfmapWrites:
    """The ofmap writes the array makes at each cycle row, kept per distinct tile shape:
    fold f writes the rows [first, first + height) and the columns [0, width) of its skewed
    tile, `spans[f]` = (first, height, width), and element (t, c) is written at local row
    base + t + c, so a row gets one write per element of its anti-diagonal. Counts and
    running totals are read per row without listing the layer's rows."""

    def __init__(self, spans: list, fold_rows: int, base: int):
        self.fold_rows, self.total_rows = fold_rows, fold_rows * len(spans)
        prefixes = {span: self._prefix_of(span, base) for span in set(spans)}
        self._prefix = list(map(prefixes.__getitem__, spans))
        self._fold_first = list(accumulate(map(itemgetter(-1), self._prefix), initial=0))
        self.total = self._fold_first[-1]
        (first, height, width), last = spans[0], spans[-1]
        self.first_last = (base + first,
                           self.total_rows - fold_rows + base + last[0] + last[1] + last[2] - 2)

    def _prefix_of(self, span: tuple, base: int) -> list[int]:
        """Writes before each local row (fold_rows + 1 entries): none up to the tile's
        first anti-diagonal, then the running total of 1, 2 .. up to the tile's narrow side,
        level, back down to 1 (only the tile's own rows are added up), then all of them."""
        first, height, width = span
        side, diagonals = min(height, width), height + width - 1
        before = base + first
        written = accumulate([*range(1, side), *(side,) * (diagonals - 2 * side + 2),
                              *range(side - 1, 0, -1)])
        return [*(0,) * (before + 1), *written,
                *(height * width,) * (self.fold_rows - before - diagonals)]

    def before(self, row: int) -> int:
        """Writes of the rows before `row` (0 <= row <= total_rows)."""
        if row >= self.total_rows:
            return self.total
        fold = row // self.fold_rows
        return self._fold_first[fold] + self._prefix[fold][row - fold * self.fold_rows]

    def before_and_at(self, row: int) -> tuple[int, int]:
        """Writes of the rows before `row`, and of row `row`."""
        fold = row // self.fold_rows
        local = row - fold * self.fold_rows
        prefix = self._prefix[fold]
        before = prefix[local]
        return self._fold_first[fold] + before, prefix[local + 1] - before

    def at(self, row: int) -> int:
        """Writes of cycle row `row`."""
        fold, local = divmod(row, self.fold_rows)
        prefix = self._prefix[fold]
        return prefix[local + 1] - prefix[local]

    def row_of(self, element: int) -> int:
        """The row of write number `element` (0-based, below `total`)."""
        fold = bisect_right(self._fold_first, element) - 1
        local = bisect_right(self._prefix[fold], element - self._fold_first[fold]) - 1
        return fold * self.fold_rows + local


@dataclass(slots=True)   # not frozen: made on every replay, and frozen fields cost 4x to set
class LayerStreams:
    """Everything SCALE-Sim's memory model consumes for one layer on one array."""

    fold_rows: int
    folds: int
    ifmap: ReadOperand
    filter: ReadOperand
    ofmap_writes: OfmapWrites       # ofmap writes the array makes at each cycle row
    sram_reads: dict
    sram_writes: dict
    compute_utilization: float      # SCALE-Sim's "Compute Util %" / 100

    @property
    def total_rows(self) -> int:
        return self.fold_rows * self.folds


def ifmap_addresses(conv: ConvShape) -> np.ndarray:
    """The im2col address matrix (OH*OW x FH*FW*C) of an H x W x C input, NO_REQUEST where a
    window runs past the input (a stride that does not divide H - FH). An address is the
    window's corner plus the element's offset in the window, so it is an outer sum."""
    out_row, out_col = np.divmod(np.arange(conv.OH * conv.OW), conv.OW)
    f_row, rest = np.divmod(np.arange(conv.FH * conv.FW * conv.C), conv.FW * conv.C)
    f_col = rest // conv.C
    corner = (out_row * conv.W + out_col) * conv.S * conv.C
    address = corner[:, None] + (f_row * conv.W * conv.C + rest)[None, :]
    if (conv.OH - 1) * conv.S + conv.FH <= conv.H and (conv.OW - 1) * conv.S + conv.FW <= conv.W:
        return address                      # every window lies inside the input
    valid = ((out_row * conv.S)[:, None] + f_row[None, :] < conv.H) \
        & ((out_col * conv.S)[:, None] + f_col[None, :] < conv.W)
    return np.where(valid, address, NO_REQUEST)


def _ifmap_valid(conv: ConvShape) -> int:
    """How many entries of the im2col matrix hold an address: a window row (column) is
    inside the input where its output row times the stride plus the filter row is."""
    if (conv.OH - 1) * conv.S + conv.FH <= conv.H and (conv.OW - 1) * conv.S + conv.FW <= conv.W:
        return conv.OH * conv.OW * conv.FH * conv.FW * conv.C
    rows = sum(max(0, min(conv.FH, conv.H - oh * conv.S)) for oh in range(conv.OH))
    cols = sum(max(0, min(conv.FW, conv.W - ow * conv.S)) for ow in range(conv.OW))
    return rows * cols * conv.C


class _Source:
    """An address matrix known by its shape, its count of addresses and whether an address
    can appear in it twice; the matrix itself is built only when a tile with missing
    addresses or a shared address needs it (most layers need neither)."""

    def __init__(self, shape: tuple[int, int], valid: int, may_share: bool, build):
        self.shape, self.valid, self.may_share, self._build = shape, valid, may_share, build
        self.complete = valid == shape[0] * shape[1]
        self._column_tiles: dict = {}

    @cached
    def matrix(self) -> np.ndarray:
        return self._build()

    def column_tiles(self, width: int) -> np.ndarray:
        """The matrix cut into tiles of `width` columns (all its rows), padded with
        NO_REQUEST past its last column: (tiles, rows, width); kept once built."""
        tiles = self._column_tiles.get(width)
        if tiles is None:
            height, columns = self.shape
            count = -(-columns // width)
            padded = np.full((height, count * width), NO_REQUEST, dtype=np.int64)
            padded[:, :columns] = self.matrix
            tiles = padded.reshape(height, count, width).transpose(1, 0, 2)
            self._column_tiles[width] = tiles
        return tiles

    @property
    def T(self) -> "_Source":
        return _Source(self.shape[::-1], self.valid, self.may_share, lambda: self.matrix.T)


def _filled(blocks: int, block_size: int, width: int, used: int) -> np.ndarray | None:
    """Which cells of `blocks` row-major blocks of `block_size` cells, `width` wide, hold an
    address when only the last block is cut short at `used` columns (a complete source
    padded to the array's edge); None when every cell does."""
    if used == width:
        return None
    cell = np.arange(blocks * block_size)
    return (cell < (blocks - 1) * block_size) | (cell % width < used)


def filter_addresses(K: int, N: int) -> np.ndarray:
    """K x N: filter n's window element k lives at n * K + k."""
    return np.arange(N)[None, :] * K + np.arange(K)[:, None]


def _anti_diagonals(height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The order that reads a height x width matrix by anti-diagonal (row + col ascending),
    bottom row first within one (so column ascending): the flat index of each element read,
    and the anti-diagonal it is on."""
    diagonal = np.arange(height + width - 1)
    low = np.maximum(diagonal - (height - 1), 0)            # its first (bottom) column
    length = np.minimum(diagonal, width - 1) - low + 1
    d = np.repeat(diagonal, length)
    column = np.arange(height * width) - (np.cumsum(length) - length - low)[d]
    return (d - column) * width + column, d


def _ends(folds: int, fold_rows: int, local_rows) -> tuple[int, int]:
    """The cycle rows of an operand's first and last request; `local_rows(f)` is the first
    and last local row of fold f's requests, or None when its tile is all padding (a
    strided window past the input)."""
    first = next(f * fold_rows + rows[0] for f in range(folds)
                 if (rows := local_rows(f)) is not None)
    last = next(f * fold_rows + rows[1] for f in reversed(range(folds))
                if (rows := local_rows(f)) is not None)
    return first, last


def _streamed(source: _Source, width: int, fold_tile: list, base: int,
              fold_rows: int) -> ReadOperand:
    """A streamed operand: `source` cut into tiles of `width` columns (all its rows), stacked
    into one matrix and filled in anti-diagonal order. Within a fold the array asks for tile
    element (t, c) at local row base + t + c, column ascending: the fill order restricted
    to the tile."""
    height, columns = source.shape
    complete = source.complete

    def stacked() -> np.ndarray:
        return source.column_tiles(width).reshape(-1, width)

    def local_rows(fold):       # a source with holes: rows of the tile's asked cells
        t = fold_tile[fold]
        tile, column = np.nonzero(stacked()[t * height:(t + 1) * height] != NO_REQUEST)
        diagonal = tile + column
        return (base + int(diagonal.min()), base + int(diagonal.max())) if tile.size else None

    def build() -> OperandStreams:
        count = -(-columns // width)
        fill, diagonal = _anti_diagonals(count * height, width)
        if complete:      # only the last tile's padded columns are empty: no matrix needed
            filled = _filled(count, height * width, width, columns - (count - 1) * width)
            valid = None if filled is None else filled[fill]
        else:
            valid = stacked().ravel()[fill] != NO_REQUEST
        order = fill if valid is None else fill[valid]
        tile = order // (width * height)
        positions = np.argsort(tile, kind="stable")      # grouped by tile, fill order kept
        tile = tile[positions]
        diagonal = diagonal if valid is None else diagonal[valid]
        rows = base + diagonal[positions] - tile * height
        return OperandStreams(fold_tile, np.searchsorted(tile, np.arange(count + 1)).tolist(),
                              rows, positions, source.may_share,
                              lambda: stacked().ravel()[fill])

    count = -(-columns // width)
    if complete:      # every element asked for: fold f's rows base .. base + height + used - 2
        last = len(fold_tile) - 1
        used = min(width, columns - fold_tile[last] * width)
        ends = base, last * fold_rows + base + height + used - 2
    else:
        ends = _ends(len(fold_tile), fold_rows, local_rows)
    layout = None
    if complete and not source.may_share:
        layout = StreamedTiles(height, width, count, columns - (count - 1) * width, base,
                               fold_tile)
    return ReadOperand(source.valid, height * count * width, ends, build, streamed=layout)


def _preloaded(source: _Source, R: int, C: int, fold_rows: int) -> ReadOperand:
    """A preloaded operand (ws filter, is ifmap): the K x cols `source` filled column slice
    after column slice (C wide), row by row; fold (slice s, row block b), slice outer, reads
    rows b*R .. b*R + R - 1 of its slice bottom first, one row a cycle, column ascending."""
    K = source.shape[0]
    blocks, slices = -(-K // R), -(-source.shape[1] // C)
    complete = source.complete

    def local_rows(fold):       # a source with holes: rows of the block's asked rows
        b, s = fold % blocks * R, fold // blocks * C
        asked = np.flatnonzero((source.matrix[b:b + R, s:s + C] != NO_REQUEST).any(axis=1))
        return (R - 1 - int(asked[-1]), R - 1 - int(asked[0])) if asked.size else None

    def prefetch() -> np.ndarray:
        return source.column_tiles(C).ravel()

    def build() -> OperandStreams:
        fold = np.arange(blocks * slices)
        k = (fold % blocks * R + R - 1)[:, None] - np.arange(R)[None, :]      # (folds, R)
        flat = ((fold // blocks)[:, None, None] * K + k[:, :, None]) * C + np.arange(C)
        inside = np.broadcast_to((k < K)[:, :, None], flat.shape)
        flat = np.where(inside, flat, 0).ravel()
        if complete:      # only the last slice's padded columns are empty: no matrix needed
            filled = _filled(slices, K * C, C, source.shape[1] - (slices - 1) * C)
        else:
            filled = prefetch() != NO_REQUEST
        asked = np.flatnonzero(inside.ravel() if filled is None
                               else inside.ravel() & filled[flat])
        cells = flat[asked]
        tile, index = np.divmod(asked, R * C)
        return OperandStreams(fold.tolist(),
                              np.searchsorted(tile, np.arange(fold.size + 1)).tolist(),
                              index // C,
                              cells if filled is None else (np.cumsum(filled) - 1)[cells],
                              source.may_share, prefetch)

    layout = None
    if complete and not source.may_share:
        layout = PreloadedTiles(K, R, C, blocks, slices, source.shape[1] - (slices - 1) * C)
    if complete:      # every row of a block asked for, the padded ones first
        ends = R - min(R, K), (blocks * slices - 1) * fold_rows + R - 1
    else:
        ends = _ends(blocks * slices, fold_rows, local_rows)
    return ReadOperand(source.valid, K * slices * C, ends, build, layout)


def build_streams(mapping: Mapping, conv: ConvShape | None = None) -> LayerStreams:
    """The demand streams, prefetch orders and counts of `conv` under `mapping`; without a
    conv, of the mapping's GEMM given to SCALE-Sim as an M x K input and N filters of 1 x K
    (its im2col matrix is the input itself: every address in one place)."""
    R, C, dataflow = mapping.rows, mapping.cols, mapping.dataflow
    M, N, K = mapping.gemm.M, mapping.gemm.N, mapping.gemm.K     # a conv's im2col GEMM
    if conv is None:
        ifmap = _Source((M, K), M * K, False, lambda: np.arange(M * K).reshape(M, K))
    else:
        # an input element lies in several windows only where windows overlap
        OH, OW = conv.OH, conv.OW
        overlap = (conv.FH > conv.S and OH > 1) or (conv.FW > conv.S and OW > 1)
        ifmap = _Source((M, K), _ifmap_valid(conv), overlap, lambda: ifmap_addresses(conv))
    weights = _Source((K, N), K * N, False, lambda: filter_addresses(K, N))
    build = {"os": _os, "ws": _ws, "is": _is}[dataflow]
    return build(ifmap, weights, R, C, M, N, K)


def _row_fold_of(row_folds: int, col_folds: int) -> list[int]:
    """The row fold of every fold, in SCALE-Sim's order (row fold inner)."""
    return list(range(row_folds)) * col_folds


def _col_fold_of(row_folds: int, col_folds: int) -> list[int]:
    """The column fold of every fold, in SCALE-Sim's order (column fold outer)."""
    return sorted(list(range(col_folds)) * row_folds)


def _per_fold(R: int, C: int, row_extent: int, col_extent: int, value) -> list:
    """`value(r, c)` of every fold in SCALE-Sim's order (column fold outer, row fold
    inner), r and c being the array rows and columns the fold uses. Only the last row fold
    and the last column fold are cut short, so it is worked out for at most four (r, c)
    and the list is made by repetition, not fold by fold."""
    row_folds, col_folds = -(-row_extent // R), -(-col_extent // C)
    rows, cols = row_extent - (row_folds - 1) * R, col_extent - (col_folds - 1) * C
    whole_cols = [value(R, C)] * (row_folds - 1) + [value(rows, C)]
    last_cols = [value(R, cols)] * (row_folds - 1) + [value(rows, cols)]
    return whole_cols * (col_folds - 1) + last_cols


def _utilization(terms: list[float]) -> float:
    """SCALE-Sim's mean per-fold compute utilization, from each fold's, summed in fold
    order as its code sums them."""
    return sum(terms) / len(terms)


def _os(ifmap, weights, R, C, M, N, K) -> LayerStreams:
    row_folds, col_folds = -(-M // R), -(-N // C)
    fold_rows = R + C + K - 2
    folds = row_folds * col_folds
    denominator = R * C * fold_rows
    # the ofmap tile is written bottom row first: its used rows are the padded tile's last
    spans = _per_fold(R, C, M, N, lambda r, c: (R - r, r, c))
    return LayerStreams(
        fold_rows=fold_rows, folds=folds,
        ifmap=_streamed(ifmap.T, R, _row_fold_of(row_folds, col_folds), 0, fold_rows),
        filter=_streamed(weights, C, _col_fold_of(row_folds, col_folds), 0, fold_rows),
        ofmap_writes=OfmapWrites(spans, fold_rows, K - 1),
        sram_reads={"ifmap": K * M * col_folds, "filter": K * N * row_folds},
        # SCALE-Sim's ofmap write count adds the padded tile's height + width once per fold
        sram_writes={"ofmap": M * N + folds * (R + C)},
        compute_utilization=_utilization(
            _per_fold(R, C, M, N, lambda r, c: r * c * K / denominator)))


def _ws(ifmap, weights, R, C, M, N, K) -> LayerStreams:
    row_folds, col_folds = -(-K // R), -(-N // C)
    fold_rows = 2 * R + C + M - 2
    denominator = R * C * (fold_rows + C - 1)
    return LayerStreams(
        fold_rows=fold_rows, folds=row_folds * col_folds,
        ifmap=_streamed(ifmap, R, _row_fold_of(row_folds, col_folds), R, fold_rows),
        filter=_preloaded(weights, R, C, fold_rows),
        ofmap_writes=OfmapWrites(_per_fold(R, C, K, N, lambda r, c: (0, M, c)), fold_rows,
                                 2 * R - 1),
        sram_reads={"ifmap": M * K * col_folds, "filter": K * N},
        sram_writes={"ofmap": M * N * row_folds},
        compute_utilization=_utilization(
            _per_fold(R, C, K, N, lambda r, c: r * c * M / denominator)))


def _is(ifmap, weights, R, C, M, N, K) -> LayerStreams:
    row_folds, col_folds = -(-K // R), -(-M // C)
    fold_rows = 2 * R + C + N - 2
    denominator = R * C * (fold_rows + C - 1)
    return LayerStreams(
        fold_rows=fold_rows, folds=row_folds * col_folds,
        ifmap=_preloaded(ifmap.T, R, C, fold_rows),
        filter=_streamed(weights.T, R, _row_fold_of(row_folds, col_folds), R, fold_rows),
        ofmap_writes=OfmapWrites(_per_fold(R, C, K, M, lambda r, c: (0, N, c)), fold_rows,
                                 2 * R - 1),
        sram_reads={"ifmap": K * M, "filter": N * K * col_folds},
        sram_writes={"ofmap": M * N * row_folds},
        compute_utilization=_utilization(
            _per_fold(R, C, K, M, lambda r, c: r * c * N / denominator)))


def fetch_rows(fill_length: int, words_per_cycle: int) -> int:
    """Rows of SCALE-Sim's fetch matrix: the fill order cut into lines of one cycle."""
    return math.ceil(fill_length / words_per_cycle)
