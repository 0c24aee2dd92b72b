"""The systolic array with its memory: every GEMM and convolution of the model on the target's
array after each pass that changed the graph (cycles, waits for memory, DRAM traffic, energy),
and the busiest GEMM node's memory figures under the three dataflows — what the app's
Systolic tab and `graphlab schedule` show."""

from __future__ import annotations

from compiler_core.hardware.systolic.memory_config import OPERANDS
from compiler_core.hardware.systolic_choices import memory_of_record

from .markup import Markup, tag
from .story import Story

DATAFLOW_NAMES = {"os": "output-stationary", "ws": "weight-stationary",
                  "is": "input-stationary"}


def systolic_section(story: Story) -> list[Markup]:
    systolic, target = story.systolic, story.target
    if systolic.busiest is None:
        return [tag("p", "The model has no MatMul, Gemm or Conv to put on the array.",
                    class_="muted")]
    busiest = systolic.busiest
    memory = memory_of_record(busiest)
    per = "; ".join(f"{o} {memory['sram_kb'][o]} kB, {memory['bandwidth_words_per_cycle'][o]} "
                    f"words/cycle" for o in OPERANDS)
    return [
        tag("p", f"Every MatMul, Gemm and Convolution on {target.name}'s {busiest['array']} "
                 f"array, {DATAFLOW_NAMES[busiest['dataflow']]}, {busiest['timing']} timing, "
                 f"run back to back. Each operand has its own SRAM, split in two halves so one "
                 f"feeds the array while the other is refilled from DRAM ({per}); when a "
                 f"refill is late the array waits. DRAM traffic counts elements read and "
                 f"written."),
        tag("h4", "Pass by pass"), _passes_table(systolic.passes),
        tag("h4", f"The busiest GEMM: {busiest['node']} ({busiest['op_type']})"),
        _figures_table(busiest),
        tag("h4", "The same GEMM under each dataflow"), _dataflows_table(systolic.dataflows),
        tag("p", "★: the best of a column. Memory-bound: waiting for memory at least half its "
                 "cycles. ", tag("code", "graphlab schedule MODEL --node NAME --sram ... "
                                         "--bandwidth ..."),
            " changes the memory; the app's Systolic tab steps through it.", class_="muted"),
    ]


def _passes_table(rows: list[dict]) -> Markup:
    heads = ("after", "GEMMs", "cycles", "waiting", "DRAM (elements)", "energy")
    body = []
    for row in rows:
        if not row["changed"]:
            continue
        if not row["gemms"]:
            cells = [tag("td", "0", class_="num")] + [tag("td", "—")] * 4
        else:
            cells = [tag("td", str(row["gemms"]), class_="num"),
                     tag("td", f"{row['cycles']:,}", class_="num"),
                     tag("td", f"{row['stall_cycles']:,}", class_="num"),
                     tag("td", f"{row['dram']:,}", class_="num"),
                     tag("td", _micro(row["energy_joules"]), class_="num")]
        body.append(tag("tr", tag("td", row["pass"]), *cells))
    return tag("table", tag("thead", tag("tr", *(tag("th", h) for h in heads))),
               tag("tbody", body), class_="systolic-passes")


def _figures_table(record: dict) -> Markup:
    reads, writes = record["sram_reads"], record["sram_writes"]
    dram_reads, dram_writes = record["dram_reads"], record["dram_writes"]
    energy = record["energy"]
    rows = [("cycles", f"{record['cycles']:,}"),
            ("waiting for memory", f"{record['stall_cycles']:,}"),
            ("SRAM reads (ifmap, filter)", f"{reads['ifmap']:,}, {reads['filter']:,}"),
            ("SRAM writes (ofmap)", f"{writes['ofmap']:,}"),
            ("DRAM reads (ifmap, filter)", f"{dram_reads['ifmap']:,}, {dram_reads['filter']:,}"),
            ("DRAM writes (ofmap)", f"{dram_writes['ofmap']:,}"),
            ("energy", f"{_micro(energy['total_joules'])} ("
                       + ", ".join(f"{level} {_micro(j)}" for level, j in
                                   energy["joules"].items()) + f"; table {energy['table']})")]
    return tag("table", tag("tbody", [tag("tr", tag("th", k), tag("td", v)) for k, v in rows]),
               class_="systolic-figures")


def _dataflows_table(comparison: dict) -> Markup:
    rows, best = comparison["dataflows"], comparison["best"]

    def cell(dataflow: str, figure: str, text: str) -> Markup:
        return tag("td", text + (" ★" if best[figure] == dataflow else ""), class_="num")

    heads = ("dataflow", "cycles", "waiting", "DRAM (elements)", "energy", "memory-bound")
    body = [tag("tr", tag("td", f"{d.upper()} ({DATAFLOW_NAMES[d]})"),
                cell(d, "cycles", f"{r['cycles']:,}"),
                cell(d, "stall_cycles", f"{r['stall_cycles']:,}"),
                cell(d, "dram", f"{r['dram']:,}"),
                cell(d, "energy_joules", _micro(r["energy_joules"])),
                tag("td", "yes" if r["memory_bound"] else "no"))
            for d, r in rows.items()]
    return tag("table", tag("thead", tag("tr", *(tag("th", h) for h in heads))),
               tag("tbody", body), class_="systolic-dataflows")


def _micro(joules: float) -> str:
    return f"{joules * 1e6:.3g} µJ"
