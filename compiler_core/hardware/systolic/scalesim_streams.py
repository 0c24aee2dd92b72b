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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from compiler_core.hardware.systolic.mapping import ConvShape, Mapping

NO_REQUEST = -1


@dataclass(frozen=True)
class Stream:
    """One operand's demand stream: `rows[j]` is the global cycle row of the j-th request,
    `addresses[j]` its address (in request order: by row, then by array column)."""

    rows: np.ndarray
    addresses: np.ndarray


@dataclass(frozen=True)
class LayerStreams:
    """Everything SCALE-Sim's memory model consumes for one layer on one array."""

    fold_rows: int
    folds: int
    ifmap: Stream
    filter: Stream
    ofmap_per_row: np.ndarray       # ofmap writes the array makes at each cycle row
    ifmap_prefetch: np.ndarray      # addresses in SRAM fill order, NO_REQUEST kept
    filter_prefetch: np.ndarray
    sram_reads: dict
    sram_writes: dict
    compute_utilization: float      # SCALE-Sim's "Compute Util %" / 100

    @property
    def total_rows(self) -> int:
        return self.fold_rows * self.folds


def ifmap_addresses(conv: ConvShape) -> np.ndarray:
    """The im2col address matrix (OH*OW x FH*FW*C) of an H x W x C input, NO_REQUEST where a
    window runs past the input (a stride that does not divide H - FH)."""
    i = np.arange(conv.OH * conv.OW)[:, None]
    j = np.arange(conv.FH * conv.FW * conv.C)[None, :]
    out_row, out_col = np.divmod(i, conv.OW)
    in_row, in_col = out_row * conv.S, out_col * conv.S
    f_row, rest = np.divmod(j, conv.FW * conv.C)
    f_col, channel = np.divmod(rest, conv.C)
    valid = (f_row + in_row < conv.H) & (f_col + in_col < conv.W)
    address = ((f_row + in_row) * conv.W + f_col + in_col) * conv.C + channel
    return np.where(valid, address, NO_REQUEST)


def filter_addresses(conv: ConvShape) -> np.ndarray:
    """K x N: filter n's window element k lives at n * K + k."""
    window = conv.FH * conv.FW * conv.C
    return np.arange(conv.N)[None, :] * window + np.arange(window)[:, None]


def _slices(extent: int, size: int) -> list[tuple[int, int]]:
    return [(start, min(start + size, extent)) for start in range(0, extent, size)]


def _padded(block: np.ndarray, rows: int, cols: int) -> np.ndarray:
    out = np.full((rows, cols), NO_REQUEST, dtype=np.int64)
    out[:block.shape[0], :block.shape[1]] = block
    return out


def _anti_diagonal_order(matrix: np.ndarray) -> np.ndarray:
    """Elements by anti-diagonal (row + col ascending), bottom row first within one."""
    rows, cols = np.indices(matrix.shape)
    order = np.lexsort((-rows.ravel(), (rows + cols).ravel()))
    return matrix.ravel()[order]


def _place(tiles: np.ndarray, fold_rows: int, base: int, skewed: bool) -> Stream:
    """Lay (folds, T, W) tiles onto the cycle rows of their folds and read them in request
    order (row, then column), dropping the padding."""
    folds, height, width = tiles.shape
    grid = np.full((folds, fold_rows, width), NO_REQUEST, dtype=np.int64)
    t = np.arange(height)[:, None]
    c = np.arange(width)[None, :]
    row = base + t + (c if skewed else 0 * c)
    grid[:, row, np.broadcast_to(c, row.shape)] = tiles
    flat = grid.reshape(-1)
    positions = np.flatnonzero(flat != NO_REQUEST)
    return Stream(rows=positions // width, addresses=flat[positions])


def _row_counts(tiles: np.ndarray, fold_rows: int, base: int) -> np.ndarray:
    """Valid requests per cycle row of skewed (folds, T, W) tiles."""
    folds, height, width = tiles.shape
    f, t, c = np.nonzero(tiles != NO_REQUEST)
    rows = f * fold_rows + base + t + c
    return np.bincount(rows, minlength=folds * fold_rows)


def build_streams(mapping: Mapping, conv: ConvShape) -> LayerStreams:
    """The demand streams, prefetch orders and counts of `conv` under `mapping`."""
    R, C, dataflow = mapping.rows, mapping.cols, mapping.dataflow
    ifmap, weights = ifmap_addresses(conv), filter_addresses(conv)
    M, K = ifmap.shape
    N = weights.shape[1]
    ones = np.ones((M, N), dtype=np.int64)       # ofmap addresses do not matter, only counts
    if dataflow == "os":
        return _os(ifmap, weights, ones, R, C, M, N, K)
    if dataflow == "ws":
        return _ws(ifmap, weights, ones, R, C, M, N, K)
    return _is(ifmap, weights, ones, R, C, M, N, K)


def _fold_index(row_folds: int, col_folds: int) -> tuple[np.ndarray, np.ndarray]:
    """(row fold, column fold) of every fold, in SCALE-Sim's order."""
    folds = np.arange(row_folds * col_folds)
    return folds % row_folds, folds // row_folds


def _utilization(used: list[int], stream: int, fold_cycles: int, R: int, C: int) -> float:
    """SCALE-Sim's mean per-fold compute utilization; for ws/is it counts a fold as its
    preloaded tile's rows + columns - 1 past the fold's cycles, as its code does."""
    return sum(u * stream / (R * C * fold_cycles) for u in used) / len(used)


def _os(ifmap, weights, ofmap, R, C, M, N, K) -> LayerStreams:
    m_slices, n_slices = _slices(M, R), _slices(N, C)
    fold_rows = R + C + K - 2
    row_of, col_of = _fold_index(len(m_slices), len(n_slices))
    a_tiles = np.stack([_padded(ifmap[a:b].T, K, R) for a, b in m_slices])
    b_tiles = np.stack([_padded(weights[:, a:b], K, C) for a, b in n_slices])
    c_tiles = np.stack([np.flip(_padded(ofmap[ma:mb, na:nb], R, C), 0)
                        for na, nb in n_slices for ma, mb in m_slices])
    used = [(mb - ma) * (nb - na) for na, nb in n_slices for ma, mb in m_slices]
    # SCALE-Sim's ofmap write count adds the padded tile's height + width once per fold
    writes = sum(used) + len(used) * (R + C)
    return LayerStreams(
        fold_rows=fold_rows, folds=len(used),
        ifmap=_place(a_tiles[row_of], fold_rows, 0, True),
        filter=_place(b_tiles[col_of], fold_rows, 0, True),
        ofmap_per_row=_row_counts(c_tiles, fold_rows, K - 1),
        ifmap_prefetch=_anti_diagonal_order(np.concatenate(list(a_tiles))),
        filter_prefetch=_anti_diagonal_order(np.concatenate(list(b_tiles))),
        sram_reads={"ifmap": sum(K * (b - a) for a, b in m_slices) * len(n_slices),
                    "filter": sum(K * (b - a) for a, b in n_slices) * len(m_slices)},
        sram_writes={"ofmap": writes},
        compute_utilization=_utilization(used, K, fold_rows, R, C))


def _ws(ifmap, weights, ofmap, R, C, M, N, K) -> LayerStreams:
    k_slices, n_slices = _slices(K, R), _slices(N, C)
    fold_rows = 2 * R + C + M - 2
    row_of, col_of = _fold_index(len(k_slices), len(n_slices))
    a_tiles = np.stack([_padded(ifmap[:, a:b], M, R) for a, b in k_slices])
    b_tiles = np.stack([np.flip(_padded(weights[ka:kb, na:nb], R, C), 0)
                        for na, nb in n_slices for ka, kb in k_slices])
    c_tiles = np.stack([_padded(ofmap[:, a:b], M, C) for a, b in n_slices])
    used = [(kb - ka) * (nb - na) for na, nb in n_slices for ka, kb in k_slices]
    return LayerStreams(
        fold_rows=fold_rows, folds=len(used),
        ifmap=_place(a_tiles[row_of], fold_rows, R, True),
        filter=_place(b_tiles, fold_rows, 0, False),
        ofmap_per_row=_row_counts(c_tiles[col_of], fold_rows, 2 * R - 1),
        ifmap_prefetch=_anti_diagonal_order(np.concatenate(list(a_tiles))),
        filter_prefetch=np.concatenate([_padded(weights[:, a:b], K, C)
                                        for a, b in n_slices]).ravel(),
        sram_reads={"ifmap": sum(M * (b - a) for a, b in k_slices) * len(n_slices),
                    "filter": sum(used)},
        sram_writes={"ofmap": M * N * len(k_slices)},
        compute_utilization=_utilization(used, M, fold_rows + C - 1, R, C))


def _is(ifmap, weights, ofmap, R, C, M, N, K) -> LayerStreams:
    k_slices, m_slices = _slices(K, R), _slices(M, C)
    fold_rows = 2 * R + C + N - 2
    row_of, col_of = _fold_index(len(k_slices), len(m_slices))
    a_tiles = np.stack([np.flip(_padded(ifmap[ma:mb, ka:kb].T, R, C), 0)
                        for ma, mb in m_slices for ka, kb in k_slices])
    b_tiles = np.stack([_padded(weights[a:b].T, N, R) for a, b in k_slices])
    c_tiles = np.stack([_padded(ofmap[a:b].T, N, C) for a, b in m_slices])
    used = [(kb - ka) * (mb - ma) for ma, mb in m_slices for ka, kb in k_slices]
    return LayerStreams(
        fold_rows=fold_rows, folds=len(used),
        ifmap=_place(a_tiles, fold_rows, 0, False),
        filter=_place(b_tiles[row_of], fold_rows, R, True),
        ofmap_per_row=_row_counts(c_tiles[col_of], fold_rows, 2 * R - 1),
        ifmap_prefetch=np.concatenate([_padded(ifmap[a:b].T, K, C)
                                       for a, b in m_slices]).ravel(),
        filter_prefetch=_anti_diagonal_order(np.concatenate(list(b_tiles))),
        sram_reads={"ifmap": sum(used), "filter": sum(N * (b - a) for a, b in k_slices)
                    * len(m_slices)},
        sram_writes={"ofmap": M * N * len(k_slices)},
        compute_utilization=_utilization(used, N, fold_rows + C - 1, R, C))


def fetch_rows(prefetch: np.ndarray, words_per_cycle: int) -> int:
    """Rows of SCALE-Sim's fetch matrix: the prefetch order cut into lines of one cycle."""
    return math.ceil(prefetch.size / words_per_cycle)
