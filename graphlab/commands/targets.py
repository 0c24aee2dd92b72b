"""`graphlab targets`: the hardware targets, their figures and where they come from.

The built-in targets, then those measured on this machine (`--measure` measures it now:
peak FLOP/s per dtype, bandwidth and per-op overhead in onnxruntime, written to the user's
data folder; see `compiler_core.profiling.machine`).  `--check FILE`: one target file read and
checked as GraphLab reads it (docs/architecture.md, *Adding a target*)."""

from __future__ import annotations

from pathlib import Path

from compiler_core.hardware.targets import Target, get_target, list_targets, \
    load_target_file, measured_targets
from compiler_core.profiling.machine import DEFAULT_THREADS, measure_machine
from compiler_core.records import to_json

from .common import add_json_flag, print_json
from ..units import format_bytes, format_si


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("targets", help="list the hardware targets (peak rates, "
                                                   "bandwidth, ridge point, array, sources)")
    parser.add_argument("--check", metavar="FILE.json",
                        help="read and check one target file (the fields it lacks or gets "
                             "wrong, named), and show it as the list shows a target")
    parser.add_argument("--measure", action="store_true",
                        help="measure this machine now (peak FLOP/s per dtype, memory "
                             "bandwidth, per-op overhead in onnxruntime) and save it as the "
                             "target this_machine")
    parser.add_argument("--threads", type=int, default=DEFAULT_THREADS, metavar="N",
                        help=f"with --measure: onnxruntime's threads (default "
                             f"{DEFAULT_THREADS}, one per core)")
    add_json_flag(parser)
    parser.set_defaults(run=run)


def target_record(target: Target) -> dict:
    """The target's file fields plus what follows from them: ridge per dtype, array shape."""
    return {
        **to_json(target),
        "ridge_point": {dtype: target.ridge_point(dtype) for dtype in target.peak_ops_per_s},
        "array": f"{target.array_rows}x{target.array_cols}",
    }


def _by_value(texts: dict[str, str]) -> str:
    """{'int8': 'x', 'float16': 'x', 'float32': 'y'} -> 'int8, float16 x; float32 y'."""
    groups: dict[str, list[str]] = {}
    for dtype, text in texts.items():
        groups.setdefault(text, []).append(dtype)
    return "; ".join(f"{', '.join(dtypes)} {text}" for text, dtypes in groups.items())


def run(args) -> int:
    if args.check:
        target = load_target_file(args.check)
        if args.json:
            print_json(target_record(target))
        else:
            print_targets([target])
            print(f"{args.check}: a valid target; pass it as --target {args.check}"
                  + _builtin_hint(target, args.check))
        return 0
    if args.measure:
        measure_machine(args.threads)
    targets = [get_target(name) for name in list_targets() + measured_targets()]
    if args.json:
        print_json({"targets": [target_record(t) for t in targets]})
    else:
        print_targets(targets)
    return 0


def _builtin_hint(target: Target, path: str) -> str:
    """A built-in target is found by its file's name: say so when the two differ."""
    if Path(path).stem == target.name:
        return ""
    return (f" (to ship it as a built-in, name the file {target.name}.json: built-ins are "
            f"found by file name)")


def print_targets(targets: list[Target]) -> None:
    for target in targets:
        print(f"{target.name}  {target.display_name}")
        peaks = _by_value({d: format_si(r, "OPS") for d, r in target.peak_ops_per_s.items()})
        ridges = _by_value({d: f"{target.ridge_point(d):.2f} ops/byte"
                            for d in target.peak_ops_per_s})
        print(f"  peak       {peaks}")
        print(f"  bandwidth  {format_si(target.bandwidth_bytes_per_s, 'B/s')}")
        print(f"  ridge      {ridges}")
        arrays = f"{target.array_count} x " if target.array_count > 1 else ""
        print(f"  array      {arrays}{target.array_rows}x{target.array_cols} at "
              f"{format_si(target.clock_hz, 'Hz')}, on-chip SRAM "
              f"{format_bytes(target.sram_bytes)}")
        print("  sources    " + "; ".join(source.title for source in target.sources))
        if target.measured is not None:
            print(f"  measured   {target.measured['when']} with {target.measured['runtime']}, "
                  f"{target.measured['threads']} threads; per-op overhead "
                  f"{target.measured['overhead_seconds_per_op'] * 1e6:.1f} us; file "
                  f"{target.path}")
