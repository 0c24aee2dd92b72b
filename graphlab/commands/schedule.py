"""`graphlab schedule`: put a GEMM or convolution on a systolic array and count the cycles.

The problem comes from a model node (`MODEL --node NAME`: its MatMul, Gemm or Conv, or the
ones in a fused node's body), from every such node of a model (`MODEL --all`, summed; with
`--per-pass`, after every pass of the pipeline), or is given directly (`--gemm M,N,K` or
`--conv H,W,FH,FW,C,N,S`, an unpadded convolution as SCALE-Sim describes it). `--sram` and
`--bandwidth` replace the target's memory per operand. A single problem's record carries the
same problem under the three dataflows (`dataflows`), as the app's Systolic tab compares them.
"""

from __future__ import annotations

from compiler_core.errors import GraphLabError
from compiler_core.hardware.node_schedule import schedule_model, schedule_node
from compiler_core.hardware.systolic.memory_config import memory_of_target
from compiler_core.hardware.targets import get_target
from compiler_core.hardware.representative_sizes import ChosenSizes
from compiler_core.hardware.systolic import DATAFLOWS, TIMINGS, schedule_conv, schedule_gemm
from compiler_core.compilation.pass_schedules import pass_schedules
from compiler_core.hardware.systolic_choices import compare_dataflows, memory_bound, \
    memory_of_record
from compiler_core.records import to_json

from ..user_input import parse_array, parse_integers, parse_operand_values
from .common import add_json_flag, print_json
from .model_options import add_pipeline_options, add_target_option, analysed_graphs, \
    sizes_line
from ..units import format_seconds

_DATAFLOW_NAMES = {"os": "output-stationary", "ws": "weight-stationary",
                   "is": "input-stationary"}


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "schedule", help="cycles of a GEMM or convolution on a systolic array",
        description="Schedule one problem: MODEL --node NAME, --gemm M,N,K or "
                    "--conv H,W,FH,FW,C,N,S.")
    parser.add_argument("model", metavar="MODEL", nargs="?",
                        help="an .onnx file or sample name (with --node)")
    problem = parser.add_mutually_exclusive_group(required=True)
    problem.add_argument("--node", metavar="NAME", help="a MatMul/Gemm/Conv node of MODEL")
    problem.add_argument("--all", action="store_true",
                         help="every MatMul/Gemm/Conv of MODEL, summed (with --pipeline: "
                              "before and after it)")
    problem.add_argument("--gemm", metavar="M,N,K", help="(M x K) . (K x N)")
    problem.add_argument("--conv", metavar="H,W,FH,FW,C,N,S",
                         help="H x W x C input, N filters of FH x FW, stride S, no padding")
    parser.add_argument("--per-pass", action="store_true",
                        help="with --all and --pipeline: the sums after every pass")
    parser.add_argument("--array", metavar="RxC", help="array rows x columns (default: the "
                                                       "target's)")
    parser.add_argument("--dataflow", choices=DATAFLOWS, default="os",
                        help="os (output-), ws (weight-) or is (input-stationary); default os")
    parser.add_argument("--timing", choices=TIMINGS, default="overlap",
                        help="overlap (double-buffered, default) or scalesim (SCALE-Sim's "
                             "count: folds back to back)")
    parser.add_argument("--sram", metavar="ifmap=KB,filter=KB,ofmap=KB",
                        help="SRAM kilobytes per operand (default: the target's)")
    parser.add_argument("--bandwidth", metavar="ifmap=W,filter=W,ofmap=W",
                        help="DRAM words (bytes) per cycle per operand: ifmap and filter "
                             "refills, ofmap drains (default: the target's)")
    add_target_option(parser)
    add_pipeline_options(parser)
    add_json_flag(parser)
    parser.set_defaults(run=run)


def schedule_record(args) -> dict:
    rows, cols = parse_array(args.array)
    memory = memory_of_target(get_target(args.target)).with_values(
        parse_operand_values(args.sram, "--sram"),
        parse_operand_values(args.bandwidth, "--bandwidth"))
    options = {"rows": rows, "cols": cols, "dataflow": args.dataflow, "timing": args.timing,
               "target": args.target, "memory": memory}
    if args.all:
        if args.model is None:
            raise GraphLabError("--all needs a MODEL", hint="graphlab schedule MODEL --all")
        analysed = analysed_graphs(args)
        record = {"sizes": to_json(analysed.sizes), "memory": to_json(memory),
                  **schedule_model(analysed.priced_final, bindings=analysed.bindings,
                                   **options)}
        if analysed.pipeline:
            before = schedule_model(analysed.priced_initial, bindings=analysed.bindings, **options)
            record["before_pipeline"] = {k: v for k, v in before.items() if k != "nodes"}
            if args.per_pass:
                record["passes"] = pass_schedules(analysed.result, analysed.bindings,
                                                  **options)
        elif args.per_pass:
            raise GraphLabError("--per-pass needs a --pipeline",
                                hint="graphlab schedule MODEL --all -p O2 --per-pass")
        return record
    if args.per_pass:
        raise GraphLabError("--per-pass goes with --all",
                            hint="graphlab schedule MODEL --all -p O2 --per-pass")
    if args.node is not None:
        if args.model is None:
            raise GraphLabError("--node needs a MODEL", hint="graphlab schedule MODEL --node "
                                                             "NAME")
        analysed = analysed_graphs(args)

        def record_of(dataflow: str) -> dict:
            return schedule_node(analysed.priced_final, args.node, bindings=analysed.bindings,
                                 **{**options, "dataflow": dataflow})
        return {"sizes": to_json(analysed.sizes), **record_of(args.dataflow),
                "dataflows": compare_dataflows(record_of)}
    if args.model is not None:
        raise GraphLabError("MODEL is only read with --node",
                            hint="drop MODEL, or name a node with --node")
    if args.gemm is not None:
        shape = parse_integers(args.gemm, "M,N,K")

        def record_of(dataflow: str) -> dict:
            return schedule_gemm(*shape, **{**options, "dataflow": dataflow}).report()
    else:
        shape = parse_integers(args.conv, "H,W,FH,FW,C,N,S")

        def record_of(dataflow: str) -> dict:
            return schedule_conv(*shape, **{**options, "dataflow": dataflow}).report()
    return {**record_of(args.dataflow), "dataflows": compare_dataflows(record_of)}


def run(args) -> int:
    record = schedule_record(args)
    if args.json:
        print_json(record)
        return 0
    if args.all:
        print_model_text(record)
        return 0
    print_text(record)
    return 0


def _counts(record: dict) -> str:
    r, w = record["dram_reads"], record["dram_writes"]
    return (f"DRAM reads ifmap {r['ifmap']:,}, filter {r['filter']:,}; writes ofmap "
            f"{w['ofmap']:,} (elements)")


def _energy_line(energy: dict) -> str:
    levels = ", ".join(f"{level} {joules * 1e6:.3g} uJ" for level, joules in
                       energy["joules"].items())
    return (f"energy        {energy['total_joules'] * 1e6:.4g} uJ ({levels}; table "
            f"{energy['table']}), energy-delay {energy['energy_delay_product']:.3g} J*s")


def _memory_line(record: dict) -> str:
    """Each operand's SRAM and interface, and whether the array waits most of the time."""
    memory = memory_of_record(record)
    sram, words = memory["sram_kb"], memory["bandwidth_words_per_cycle"]
    per = ", ".join(f"{o} {sram[o]} kB at {words[o]} words/cycle" for o in sram)
    bound = "memory-bound" if memory_bound(record["cycles"], record["stall_cycles"]) else \
        "compute-bound"
    return f"SRAM/DRAM     {per}: {bound} on the array"


def print_model_text(record: dict) -> None:
    print(sizes_line(ChosenSizes.from_dict(record["sizes"])))
    print(f"{len(record['nodes'])} GEMMs/convolutions back to back on a {record['array']} "
          f"array, {_DATAFLOW_NAMES[record['dataflow']]}, {record['timing']} timing")
    print(f"cycles        {record['cycles']:,}, {record['stall_cycles']:,} waiting for memory")
    print(f"memory        {_counts(record)}")
    print(_energy_line(record["energy"]))
    if "before_pipeline" in record:
        before = record["before_pipeline"]
        print(f"before the pipeline: cycles {before['cycles']:,}, {_counts(before)}")
    if "passes" in record:
        print_passes(record["passes"])
    for node in record["nodes"]:
        print(f"  {node['node']:40} {node['op_type']:14} cycles {node['cycles']:>12,}  "
              f"stalls {node['stall_cycles']:>10,}")


def print_passes(rows: list[dict]) -> None:
    """The model as loaded and every pass that changed it: its GEMMs summed on the array."""
    print(f"{'after':28} {'GEMMs':>5} {'cycles':>12} {'waiting':>12} {'DRAM elements':>14} "
          f"{'energy':>10}")
    for row in rows:
        if not row["changed"]:
            continue
        if not row["gemms"]:
            print(f"{row['pass']:28} {0:>5}")
            continue
        print(f"{row['pass']:28} {row['gemms']:>5} {row['cycles']:>12,} "
              f"{row['stall_cycles']:>12,} {row['dram']:>14,} "
              f"{row['energy_joules'] * 1e6:>7.4g} uJ")


def print_dataflows(comparison: dict) -> None:
    """The same problem and memory under each dataflow; * marks the best of a column."""
    rows, best = comparison["dataflows"], comparison["best"]

    def mark(dataflow: str, figure: str) -> str:
        return "*" if best[figure] == dataflow else " "

    print(f"dataflows     {'cycles':>13} {'waiting':>13} {'DRAM elements':>15} {'energy':>12}")
    for dataflow, row in rows.items():
        bound = "  memory-bound" if row["memory_bound"] else ""
        print(f"  {dataflow:11} {row['cycles']:>12,}{mark(dataflow, 'cycles')} "
              f"{row['stall_cycles']:>12,}{mark(dataflow, 'stall_cycles')} "
              f"{row['dram']:>14,}{mark(dataflow, 'dram')} "
              f"{row['energy_joules'] * 1e6:>8.4g} uJ{mark(dataflow, 'energy_joules')}{bound}")


def _percent(fraction: float) -> str:
    return f"{fraction * 100:.3g}%"


def print_text(record: dict) -> None:
    if "sizes" in record:
        print(sizes_line(ChosenSizes.from_dict(record["sizes"])))
    where = f"node {record['node']} ({record['op_type']}): " if "node" in record else ""
    if "gemm" in record:
        g = record["gemm"]
        what = f"GEMM ({g['M']} x {g['K']}) . ({g['K']} x {g['N']})"
    else:
        what = f"{record['instances']} GEMMs back to back"
    print(f"{where}{what} on a {record['array']} array, "
          f"{_DATAFLOW_NAMES[record['dataflow']]}, {record['timing']} timing")
    print(f"folds         {record['folds']}, mapping efficiency "
          f"{_percent(record['mapping_efficiency'])} (PEs holding real data)")
    print(f"cycles        {record['cycles']:,} (SCALE-Sim's count, the last busy cycle's "
          f"number: {format_seconds(record['seconds'])} on {record['target']}), "
          f"{record['stall_cycles']:,} waiting for memory")
    print(f"utilization   {_percent(record['utilization'])} of the array's multiply-accumulates")
    per_fold = ", ".join(f"{cycles} x {count}" for cycles, count in
                         record["cycles_per_fold"][:6])
    more = " ..." if len(record["cycles_per_fold"]) > 6 else ""
    print(f"cycles/fold   {per_fold}{more}  (cycles x folds)")
    phases = record["phases"]
    print("phases        " + ", ".join(f"{name} {phases[name]:,}" for name in phases))
    reads, writes = record["sram_reads"], record["sram_writes"]
    print(f"memory        SRAM reads ifmap {reads['ifmap']:,}, filter {reads['filter']:,}; "
          f"writes ofmap {writes['ofmap']:,}; {_counts(record)}")
    print(_energy_line(record["energy"]))
    print(_memory_line(record))
    if "dataflows" in record:
        print_dataflows(record["dataflows"])
    for part in record.get("parts", []):
        if part["note"]:
            print(f"note: {part['source']}: {part['note']}")
