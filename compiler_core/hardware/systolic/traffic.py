"""Off-chip traffic per fold: what each fold must fetch and store, and whether SRAM holds it.

The model, at fold granularity (every operand is `element_bytes` wide, outputs included; a
tile's bytes are rounded up to whole bytes for sub-byte types):

* A fold touches one tile of each operand (see `Mapping.tile_elements`); its working set is
  the three tiles' bytes. SRAM `fits` the schedule if it holds the largest working set, and
  is `double_buffered` if it holds twice that: one fold computes while the next one's tiles
  arrive (prefetch). Without double buffering, fetches cannot overlap compute.
* An input tile (A or B) is fetched when it differs from the previous fold's tile of the
  same operand (it stays in SRAM otherwise); the first fold fetches both.
* The output tile C is stored once it is complete: after every fold when C lies along the
  array's rows (os), else after the last row fold of each column fold, since the ws/is row
  folds split K and accumulate into the same C tile in SRAM.
* Before fold k (k >= 1) the memory moves fold k's fetches plus fold k-1's store:
  window_bytes(k), taking window_cycles(k) = ceil(window_bytes(k) / bytes_per_cycle).
  The first fold's fetch (`initial_load_cycles`) and the last fold's store
  (`final_store_cycles`) are reported apart and not added to the schedule, as SCALE-Sim's
  "Total Cycles" leaves its initial prefetch out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from compiler_core.hardware.systolic.mapping import Mapping, OPERAND_DIMS


@dataclass(frozen=True)
class FoldTraffic:
    """Bytes each fold fetches and stores for one mapping, element size and memory system."""

    mapping: Mapping
    element_bytes: float
    bytes_per_cycle: float
    sram_bytes: int

    def _depends(self, operand: str) -> tuple[bool, bool]:
        dims = OPERAND_DIMS[operand]
        return self.mapping.row_dim in dims, self.mapping.col_dim in dims

    def _tile_bytes(self, operand: str, row_fold: int, col_fold: int) -> int:
        elements = self.mapping.tile_elements(operand, row_fold, col_fold)
        return math.ceil(elements * self.element_bytes)

    def fetch_bytes(self, row_fold: int, col_fold: int) -> int:
        """Bytes of A and B tiles fold (row_fold, col_fold) must bring in."""
        first = row_fold == 0 and col_fold == 0
        total = 0
        for operand in ("A", "B"):
            on_rows, on_cols = self._depends(operand)
            changed = (on_rows and self.mapping.row_folds > 1) or (on_cols and row_fold == 0)
            if first or changed:
                total += self._tile_bytes(operand, row_fold, col_fold)
        return total

    def store_bytes(self, row_fold: int, col_fold: int) -> int:
        """Bytes of the C tile written back after fold (row_fold, col_fold), 0 if none."""
        on_rows, _ = self._depends("C")
        if on_rows or row_fold == self.mapping.row_folds - 1:
            return self._tile_bytes("C", row_fold, col_fold)
        return 0

    def window_bytes(self, row_fold: int, col_fold: int) -> int:
        """Fetches of this fold plus the store of the fold before it (0 for the first)."""
        if row_fold == 0 and col_fold == 0:
            return 0
        if row_fold > 0:
            previous = (row_fold - 1, col_fold)
        else:
            previous = (self.mapping.row_folds - 1, col_fold - 1)
        return self.fetch_bytes(row_fold, col_fold) + self.store_bytes(*previous)

    def window_cycles(self, row_fold: int, col_fold: int) -> int:
        return math.ceil(self.window_bytes(row_fold, col_fold) / self.bytes_per_cycle)

    def _sum_over_blocks(self, per_fold) -> int:
        return sum(per_fold(block.row_lo, block.group_lo) * block.size
                   for block in self.mapping.fold_blocks)

    @property
    def working_set_bytes(self) -> int:
        """The largest A + B + C tile bytes of any fold (the first fold is the largest)."""
        return sum(self._tile_bytes(operand, 0, 0) for operand in OPERAND_DIMS)

    @property
    def fits(self) -> bool:
        return self.working_set_bytes <= self.sram_bytes

    @property
    def double_buffered(self) -> bool:
        return 2 * self.working_set_bytes <= self.sram_bytes

    @property
    def dram_read_bytes(self) -> int:
        return self._sum_over_blocks(self.fetch_bytes)

    @property
    def dram_write_bytes(self) -> int:
        return self._sum_over_blocks(self.store_bytes)

    @property
    def initial_load_cycles(self) -> int:
        return math.ceil(self.fetch_bytes(0, 0) / self.bytes_per_cycle)

    @property
    def final_store_cycles(self) -> int:
        last_row, last_col = self.mapping.row_folds - 1, self.mapping.col_folds - 1
        return math.ceil(self.store_bytes(last_row, last_col) / self.bytes_per_cycle)

    def to_dict(self) -> dict:
        return {
            "element_bytes": self.element_bytes,
            "bytes_per_cycle": self.bytes_per_cycle,
            "sram_bytes": self.sram_bytes,
            "working_set_bytes": self.working_set_bytes,
            "fits": self.fits,
            "double_buffered": self.double_buffered,
            "dram_read_bytes": self.dram_read_bytes,
            "dram_write_bytes": self.dram_write_bytes,
            "initial_load_cycles": self.initial_load_cycles,
            "final_store_cycles": self.final_store_cycles,
        }
