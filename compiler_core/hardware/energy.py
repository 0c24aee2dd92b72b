"""Energy of a layer on the array, split by level, from a cited per-access table.

A table (`energy_tables/<name>.json`) gives the energy of one multiply-accumulate per dtype,
how many register accesses a MAC makes and what one costs (as a multiple of the MAC), the
energy of a 64-bit SRAM access at a few sizes, and of a 64-bit DRAM access. A layer's energy:

    mac       MACs x E_mac(dtype)
    register  MACs x accesses per MAC x E_mac x register factor
    sram      per operand: (array-side reads or writes + DRAM-side fills or drains)
              x element bytes x E_sram(that SRAM's size) / 8
    dram      (DRAM reads + writes) x element bytes x E_dram / 8

The SRAM energy per access is interpolated log-linearly in size between the table's points
(clamped outside them). The energy-delay product is energy (J) x time (s).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from compiler_core.errors import GraphLabError

TABLES_DIR = Path(__file__).with_name("energy_tables")
DEFAULT_TABLE = "horowitz45"
PICO = 1e-12


@dataclass(frozen=True)
class EnergyTable:
    name: str
    mac_pj: dict
    register_accesses_per_mac: float
    register_factor: float
    sram_points: tuple
    dram_pj_per_64_bits: float
    sources: tuple

    def mac(self, dtype: str) -> float:
        if dtype not in self.mac_pj:
            raise GraphLabError(f"energy table {self.name!r} has no MAC energy for {dtype}",
                                where=self.name,
                                hint=f"use one of {', '.join(self.mac_pj)}")
        return self.mac_pj[dtype]

    def sram_pj_per_byte(self, size_bytes: int) -> float:
        points = self.sram_points
        if size_bytes <= points[0][0]:
            return points[0][1] / 8
        for (low_size, low), (high_size, high) in zip(points, points[1:]):
            if size_bytes <= high_size:
                share = math.log(size_bytes / low_size) / math.log(high_size / low_size)
                return (low + share * (high - low)) / 8
        return points[-1][1] / 8


def list_tables() -> list[str]:
    return sorted(p.stem for p in TABLES_DIR.glob("*.json"))


@lru_cache(maxsize=None)
def get_table(name: str | None = None) -> EnergyTable:
    name = name or DEFAULT_TABLE
    path = TABLES_DIR / f"{name}.json"
    if not path.is_file():
        raise GraphLabError(f"unknown energy table {name!r}", where=name,
                            hint=f"use one of {', '.join(list_tables())}")
    data = json.loads(path.read_text(encoding="utf-8"))
    return EnergyTable(name=data["name"], mac_pj=dict(data["mac_pj"]),
                       register_accesses_per_mac=data["register_accesses_per_mac"],
                       register_factor=data["register_pj_per_mac_energy"],
                       sram_points=tuple(tuple(p) for p in data["sram_pj_per_64_bits"]),
                       dram_pj_per_64_bits=data["dram_pj_per_64_bits"],
                       sources=tuple(s["title"] for s in data["sources"]))


def layer_energy(table: EnergyTable, *, macs: int, dtype: str, element_bytes: float,
                 sram_bytes: dict, array_accesses: dict, dram_accesses: dict,
                 seconds: float) -> dict:
    """Joules per level, the total and the energy-delay product. `sram_bytes`,
    `array_accesses` and `dram_accesses` are keyed by operand (ifmap, filter, ofmap);
    accesses count elements."""
    mac = table.mac(dtype)
    levels = {
        "mac": macs * mac * PICO,
        "register": macs * table.register_accesses_per_mac * table.register_factor * mac
        * PICO,
        "sram": sum((array_accesses[o] + dram_accesses[o]) * element_bytes
                    * table.sram_pj_per_byte(sram_bytes[o]) for o in sram_bytes) * PICO,
        "dram": sum(dram_accesses.values()) * element_bytes * table.dram_pj_per_64_bits / 8
        * PICO,
    }
    total = sum(levels.values())
    return {"table": table.name, "joules": levels, "total_joules": total,
            "energy_delay_product": total * seconds}
