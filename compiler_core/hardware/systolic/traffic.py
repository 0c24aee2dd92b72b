"""Off-chip traffic per fold: what each fold must fetch and store, and whether SRAM holds it.

The model, at fold granularity (every operand is `element_bytes` wide, outputs included; a
tile's bytes are rounded up to whole bytes for sub-byte types). Each operand has its own SRAM
and its own DRAM interface (`MemoryConfig`: A is the ifmap, B the filter, C the ofmap):

* A fold touches one tile of each operand (see `Mapping.tile_elements`). The memory `fits`
  the schedule if every operand's SRAM holds its largest tile, and is `double_buffered` if
  every half SRAM does: one half feeds the array while the other receives the next fold's
  tile (prefetch). Without double buffering, fetches cannot overlap compute.
* An input tile (A or B) is fetched when it differs from the previous fold's tile of the
  same operand (it stays in SRAM otherwise); the first fold fetches both.
* The output tile C is stored once it is complete: after every fold when C lies along the
  array's rows (os), else after the last row fold of each column fold, since the ws/is row
  folds split K and accumulate into the same C tile in SRAM.
* Before fold k (k >= 1) each interface moves its share: A and B fold k's fetches, C fold
  k-1's store, all at once on their own interfaces, so the window takes
  window_cycles(k) = max over operands of ceil(bytes / that interface's bytes per cycle).
  The first fold's fetch (`initial_load_cycles`) and the last fold's store
  (`final_store_cycles`) are reported apart and not added to the schedule, as SCALE-Sim's
  "Total Cycles" leaves its initial prefetch out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from compiler_core.hardware.systolic.mapping import Mapping
from compiler_core.hardware.systolic.memory_config import GEMM_OPERAND, MemoryConfig, by_operand

_MEMORY_OF = {gemm: operand for operand, gemm in GEMM_OPERAND.items()}


def _by_memory(per_gemm_operand: dict[str, int]) -> dict[str, int]:
    """Values keyed 'A', 'B', 'C' keyed by the memory that holds them (ifmap, ...)."""
    return {_MEMORY_OF[o]: value for o, value in per_gemm_operand.items()}


@dataclass(frozen=True)
class FoldTraffic:
    """Bytes each fold fetches and stores for one mapping, element size and memory system."""

    mapping: Mapping
    element_bytes: float
    memory: MemoryConfig

    def __post_init__(self):
        self.__dict__.update(self._sizes())

    def _sizes(self) -> dict:
        """The tile table, the totals and the working set, worked out once on construction
        in one pass over the operands (every report reads all of them; plain attributes,
        as a cached property would cost a call on its first read).

        `_tile_table`: each operand's tile bytes indexed [last row fold?][last column
        fold?] (every other fold uses the whole array, so a tile's size depends on nothing
        else). `_block_totals`: bytes fetched (A, B) and stored (C) over all folds, in
        closed form: an input tile is fetched by every fold when it changes with the row
        fold, else by the first row fold of each column fold when it changes with the
        column fold, else once; the output tile is stored after every fold when it changes
        with the row fold, else after the last row fold of each column fold.
        `working_set_bytes`: each operand's largest tile (the first fold's); `fits` and
        `double_buffered`: whether every SRAM, every half SRAM, holds it."""
        mapping, size, ceil = self.mapping, self.element_bytes, math.ceil
        row_folds, col_folds = mapping.row_folds, mapping.col_folds
        rows = (mapping.rows_used(0), mapping.rows_used(row_folds - 1))
        cols = (mapping.cols_used(0), mapping.cols_used(col_folds - 1))
        table, totals, largest = {}, {}, {}
        for operand, (on_rows, on_cols, whole) in mapping.tile_factors.items():
            (r0, r1), (c0, c1) = rows if on_rows else (1, 1), cols if on_cols else (1, 1)
            inner, inner_edge = ceil(whole * r0 * c0 * size), ceil(whole * r0 * c1 * size)
            last, last_edge = ceil(whole * r1 * c0 * size), ceil(whole * r1 * c1 * size)
            table[operand] = tiles = ((inner, inner_edge), (last, last_edge))
            largest[operand] = tiles[row_folds == 1][col_folds == 1]
            one_row = (col_folds - 1) * inner + inner_edge    # a row fold's, over the
            last_row = (col_folds - 1) * last + last_edge     # column folds; the last's
            every_fold = (row_folds - 1) * one_row + last_row
            if operand == "C":
                totals[operand] = every_fold if on_rows else last_row
            elif on_rows and row_folds > 1:
                totals[operand] = every_fold
            elif on_cols:
                totals[operand] = last_row if row_folds == 1 else one_row
            else:
                totals[operand] = largest[operand]
        held = tuple(zip(largest.values(), self.memory.sram_kb))
        return {"_tile_table": table, "_block_totals": totals, "working_set_bytes": largest,
                "fits": all(b <= 1024 * kb for b, kb in held),
                "double_buffered": all(2 * b <= 1024 * kb for b, kb in held)}

    def summary(self) -> dict:
        """The report's view: the element size, the memory written flat, the working set
        and the totals. Built directly, not through `records.to_json`: every report of
        every layer writes it, and the generic path reads each value through a dotted
        path."""
        memory, totals = self.memory, self._block_totals
        return {"element_bytes": self.element_bytes,
                "sram_kb": by_operand(memory.sram_kb),
                "bandwidth_words_per_cycle": by_operand(memory.bandwidth),
                "word_bytes": memory.word_bytes, "source": memory.source,
                "working_set_bytes": _by_memory(self.working_set_bytes),
                "fits": self.fits, "double_buffered": self.double_buffered,
                "dram_read_bytes": totals["A"] + totals["B"],
                "dram_write_bytes": totals["C"],
                "initial_load_cycles": self.initial_load_cycles,
                "final_store_cycles": self.final_store_cycles}

    def bytes_per_cycle(self, operand: str) -> float:
        """DRAM bytes per cycle of GEMM operand 'A', 'B' or 'C'."""
        return self.memory.words(_MEMORY_OF[operand]) * self.memory.word_bytes

    def sram_bytes(self, operand: str) -> int:
        return self.memory.sram_bytes(_MEMORY_OF[operand])

    def _depends(self, operand: str) -> tuple[bool, bool]:
        """Whether the operand's tile changes with the row fold, with the column fold."""
        on_rows, on_cols, _ = self.mapping.tile_factors[operand]
        return on_rows, on_cols

    def tile_bytes(self, operand: str, row_fold: int, col_fold: int) -> int:
        mapping = self.mapping
        return self._tile_table[operand][row_fold == mapping.row_folds - 1][
            col_fold == mapping.col_folds - 1]

    def operand_fetch_bytes(self, operand: str, row_fold: int, col_fold: int) -> int:
        """Bytes of input tile 'A' or 'B' that fold (row_fold, col_fold) must bring in."""
        on_rows, on_cols = self._depends(operand)
        first = row_fold == 0 and col_fold == 0
        changed = (on_rows and self.mapping.row_folds > 1) or (on_cols and row_fold == 0)
        return self.tile_bytes(operand, row_fold, col_fold) if first or changed else 0

    def fetch_bytes(self, row_fold: int, col_fold: int) -> int:
        """Bytes of A and B tiles fold (row_fold, col_fold) must bring in."""
        return sum(self.operand_fetch_bytes(o, row_fold, col_fold) for o in ("A", "B"))

    def store_bytes(self, row_fold: int, col_fold: int) -> int:
        """Bytes of the C tile written back after fold (row_fold, col_fold), 0 if none."""
        on_rows, _ = self._depends("C")
        if on_rows or row_fold == self.mapping.row_folds - 1:
            return self.tile_bytes("C", row_fold, col_fold)
        return 0

    def window_bytes(self, row_fold: int, col_fold: int) -> dict[str, int]:
        """Per operand: this fold's fetches of A and B, the previous fold's store of C."""
        if row_fold == 0 and col_fold == 0:
            return {"A": 0, "B": 0, "C": 0}
        if row_fold > 0:
            previous = (row_fold - 1, col_fold)
        else:
            previous = (self.mapping.row_folds - 1, col_fold - 1)
        return {"A": self.operand_fetch_bytes("A", row_fold, col_fold),
                "B": self.operand_fetch_bytes("B", row_fold, col_fold),
                "C": self.store_bytes(*previous)}

    def window_cycles(self, row_fold: int, col_fold: int) -> int:
        """The slowest interface's cycles for the window before this fold."""
        moved = self.window_bytes(row_fold, col_fold)
        return max(math.ceil(b / self.bytes_per_cycle(o)) for o, b in moved.items())

    @property
    def dram_read_bytes(self) -> int:
        return self._block_totals["A"] + self._block_totals["B"]

    def operand_read_bytes(self, operand: str) -> int:
        return self._block_totals[operand]

    @property
    def dram_write_bytes(self) -> int:
        return self._block_totals["C"]

    @property
    def initial_load_cycles(self) -> int:
        """The first fold's fetch: its A and B tiles, each on its own interface."""
        ifmap, weights, _ = self.working_set_bytes.values()
        words, size = self.memory.bandwidth, self.memory.word_bytes
        return max(-(-ifmap // (words[0] * size)), -(-weights // (words[1] * size)))

    @property
    def final_store_cycles(self) -> int:
        """The last fold's store: its C tile (always stored)."""
        return -(-self._tile_table["C"][True][True] // (self.memory.bandwidth[2]
                                                       * self.memory.word_bytes))
