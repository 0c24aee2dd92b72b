"""The memory beside the array: one SRAM per operand and the DRAM interface that fills it.

SCALE-Sim's terms, which GraphLab keeps so its figures can be checked against it: the ifmap
(A), filter (B) and ofmap (C) each have an SRAM of `sram_kb` kilobytes, split half and half
for double buffering, and an interface to DRAM moving `bandwidth` words per cycle (ifmap and
filter: refills into the SRAM; ofmap: drains out of it). A word is `word_bytes` bytes (SCALE-Sim
fixes it at 1).

A target file states its memory in an optional `memory` object (see `FIELD_HELP` in
`targets`); without one it is derived from the target's totals: the SRAM shared in three
equal parts and every interface given the target's bytes per cycle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from compiler_core.hardware.systolic.mapping import ScheduleError, positive_int
from compiler_core.records import record_field

OPERANDS = ("ifmap", "filter", "ofmap")
_INDEX = {operand: index for index, operand in enumerate(OPERANDS)}
GEMM_OPERAND = {"ifmap": "A", "filter": "B", "ofmap": "C"}


def by_operand(values: tuple[int, int, int]) -> dict[str, int]:
    """One value per operand, named as a target file names them."""
    return dict(zip(OPERANDS, values))


@dataclass(frozen=True)
class MemoryConfig:
    """SRAM kilobytes and DRAM words per cycle for each operand (keys: OPERANDS)."""

    sram_kb: tuple[int, int, int] = record_field(convert=by_operand)
    bandwidth: tuple[int, int, int] = record_field(key="bandwidth_words_per_cycle",
                                                   convert=by_operand)
    word_bytes: int = 1
    source: str = "given"

    def __post_init__(self):
        for name in ("sram_kb", "bandwidth"):
            values = tuple(getattr(self, name))
            if len(values) != 3:
                raise ScheduleError(f"{name} needs one value per operand", where=name,
                                    hint="give ifmap, filter and ofmap")
            object.__setattr__(self, name, tuple(
                positive_int(f"{name} {operand}", value)
                for operand, value in zip(OPERANDS, values)))

    def sram(self, operand: str) -> int:
        return self.sram_kb[_INDEX[operand]]

    def words(self, operand: str) -> int:
        return self.bandwidth[_INDEX[operand]]

    def sram_bytes(self, operand: str) -> int:
        return self.sram(operand) * 1024

    def with_values(self, sram: dict | None = None, bandwidth: dict | None = None
                    ) -> "MemoryConfig":
        """A copy with some operands' SRAM sizes or bandwidths replaced."""
        for given in (sram or {}, bandwidth or {}):
            unknown = sorted(set(given) - set(OPERANDS))
            if unknown:
                raise ScheduleError(f"unknown operand {unknown[0]!r}", where=unknown[0],
                                    hint="use ifmap, filter and ofmap")
        sizes = tuple((sram or {}).get(o, self.sram(o)) for o in OPERANDS)
        words = tuple((bandwidth or {}).get(o, self.words(o)) for o in OPERANDS)
        changed = sram or bandwidth
        return MemoryConfig(sizes, words, self.word_bytes,
                            "given" if changed else self.source)


def memory_of_target(target) -> MemoryConfig:
    """The target's stated memory, or one derived from its totals (said in `source`)."""
    stated = getattr(target, "memory", None)
    if stated is not None:
        return stated
    third_kb = max(1, target.sram_bytes // 3 // 1024)
    words = max(1, math.floor(target.bytes_per_cycle))
    return MemoryConfig((third_kb,) * 3, (words,) * 3, 1,
                        f"derived from {target.name}'s sram_bytes and bandwidth")


def memory_from_dict(data, where: str = "memory") -> MemoryConfig:
    """A target file's `memory` object: {"sram_kb": {...}, "bandwidth_words_per_cycle": {...}}."""
    if not isinstance(data, dict) or set(data) - {"sram_kb", "bandwidth_words_per_cycle"}:
        raise ScheduleError("memory must hold sram_kb and bandwidth_words_per_cycle",
                            where=where, hint='e.g. {"sram_kb": {"ifmap": 64, "filter": 64, '
                                              '"ofmap": 32}, "bandwidth_words_per_cycle": '
                                              '{"ifmap": 16, "filter": 16, "ofmap": 16}}')
    values = []
    for key in ("sram_kb", "bandwidth_words_per_cycle"):
        part = data.get(key)
        if not isinstance(part, dict) or set(part) != set(OPERANDS):
            raise ScheduleError(f"memory.{key} must name ifmap, filter and ofmap", where=where,
                                hint="give a whole number for each of the three operands")
        values.append(tuple(part[o] for o in OPERANDS))
    return MemoryConfig(values[0], values[1], 1, "target")
