"""`graphlab compile MODEL`: run a pipeline of passes, report each pass, write the result.

The report is the PassManager's snapshots (``Snapshot.summary()``), printed as a table or as
JSON; with ``--verify`` every pass is checked against the input model with onnxruntime, the
final model (or, with ``--runtime-check each``, every pass's) is also run at onnxruntime's
default optimization level in a child process, and the command exits with status 1 when a
check fails.  ``--runtime onnxruntime`` writes fused nodes as onnxruntime's own operators
(``compiler_core.lowering``) and reports what each became.  ``--print-ir-after`` prints the IR
(as `graphlab show` does) after the named pass, after every pass that changed the graph, or
after all of them, as the passes run: on stdout before the report, or on stderr with
``--json`` so that stdout stays one JSON document.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from compiler_core.compilation import Compilation, compile_model
from compiler_core.ir import SavedModel, save_model
from compiler_core.passes.framework.instruments import PRINT_ALL, PRINT_CHANGED, IRPrinter
from compiler_core.records import to_json
from compiler_core.runtime_check import LEVELS
from compiler_core.runtime_verify import RuntimeVerdict
from compiler_core.verify import load_inputs

from ..samples import size_hints
from ..user_input import parse_bindings
from .common import (add_edits_option, add_json_flag, add_model_argument, add_plugins_option,
                     edits_line, load_edited, print_json)
from .model_options import add_target_option
from .runtime_options import (add_runtime_check_options, run_runtime_check, runtime_cell,
                              wants_verify)

if TYPE_CHECKING:   # the lowering is imported only when --runtime onnxruntime asks for it
    from compiler_core.lowering import Lowering

MAX_DECLINES_SHOWN = 10  # per pass, in the text report
RUNTIMES = ("onnx", "onnxruntime")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("compile", help="optimize a model with a pipeline of passes")
    add_model_argument(parser)
    parser.add_argument("-o", "--output", metavar="OUT.onnx",
                        help="write the optimized model here")
    parser.add_argument("-p", "--pipeline", default="default", metavar="NAME|p1,p2,...",
                        help="a preset (clean, O1, O2, O2-int8, O2-partition, ...; default "
                             "O2) or comma-separated pass names (`graphlab passes` lists both)")
    parser.add_argument("--bind", metavar="k=v,...",
                        help="sizes for symbolic input dims, e.g. batch=1,seq=128")
    parser.add_argument("--verify", action="store_true",
                        help="check every pass against the input model with onnxruntime")
    parser.add_argument("--inputs", metavar="FILE.npz",
                        help="inputs for --verify, one array per model input (implies --verify)")
    parser.add_argument("--calibrate", metavar="FILE.npz",
                        help="calibration inputs for quantize_int8 (O2-int8), one array per "
                             "model input, samples along the first axis (default: generated)")
    parser.add_argument("--external-data", action="store_true",
                        help="write the weights to OUT.onnx.data beside the model (done by "
                             "itself when they would take one file past protobuf's 2 GiB "
                             "limit)")
    parser.add_argument("--runtime", choices=RUNTIMES, default="onnx",
                        help="onnx (default): fused nodes as model-local functions, for any "
                             "runtime; onnxruntime: as onnxruntime's operators (Attention, "
                             "SkipLayerNormalization, ...) or inline, which it runs fastest")
    parser.add_argument("--print-ir-after", metavar=f"PASS|{PRINT_CHANGED}|{PRINT_ALL}",
                        help="print the IR after this pass (each time it runs), after every "
                             "pass that changed the graph, or after all; on stderr with --json")
    add_runtime_check_options(parser)
    add_target_option(parser)
    add_edits_option(parser)
    add_plugins_option(parser)
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    graph, edited = load_edited(args.model, args.edits)
    verify = args.verify or args.inputs is not None or wants_verify(args)
    compiled = compile_model(
        graph, args.pipeline, parse_bindings(args.bind), args.target,
        size_hints=size_hints(args.model), verify=verify,
        verify_inputs=load_inputs(args.inputs, graph) if args.inputs else None,
        calibration_inputs=[load_inputs(args.calibrate, graph)] if args.calibrate else None,
        instruments=[IRPrinter(args.print_ir_after, sys.stderr if args.json else sys.stdout)]
        if args.print_ir_after else [],
        all_near_misses=False,   # the report shows the declines, not the patterns' near misses
        declines=not args.json)  # the --json record shows none
    result = compiled.result
    lowering = None
    if args.runtime == "onnxruntime":
        from compiler_core.lowering import lower_for_onnxruntime
        lowering = lower_for_onnxruntime(result.final)
    saved = None
    if args.output:
        saved = save_model(lowering.graph if lowering else result.final, args.output,
                           external_data=True if args.external_data else None)
    runtime = run_runtime_check(args, result, lowering.graph if lowering else None,
                                lowering.tolerance if lowering else None)
    report = compile_report(compiled, saved, runtime, lowering)
    if edited:
        report["edits"] = to_json(edited)
    if args.json:
        print_json(report)
    else:
        if edited:
            print(edits_line(edited))
        _print_text(compiled, report, lowering, saved)
    failed = [s.pass_name for s in result.snapshots if s.verify is not None and not s.verify.ok]
    if failed:
        print(f"graphlab: verification FAILED: outputs changed beyond tolerance after "
              f"{', '.join(failed)}", file=sys.stderr)
    if runtime is not None and not runtime.ok:
        print(f"graphlab: verification FAILED at {LEVELS[runtime.level]}: "
              f"{runtime.headline()}", file=sys.stderr)
    return 1 if failed or (runtime is not None and not runtime.ok) else 0


def compile_report(compiled: Compilation, saved: SavedModel | None,
                   runtime: RuntimeVerdict | None = None,
                   lowering: Lowering | None = None) -> dict:
    """The `--json` record: the compilation's own (what it decided, node counts, the final
    op histogram, one entry per pass, the numerical check), with the runtime check (None
    when it did not run), the files written, and the export: for ``--runtime onnxruntime``
    what each fused node became."""
    record = to_json(compiled.record())
    for entry, check in zip(record["passes"], runtime.per_pass if runtime else []):
        entry["runtime"] = to_json(check)
    return {**record,
            "runtime_check": to_json(runtime) if runtime else None,
            "output": saved.path if saved else None,
            "output_files": to_json(saved) if saved else None,
            "export": to_json(lowering) if lowering else {"runtime": "onnx"}}


def _print_text(compiled: Compilation, report: dict, lowering: Lowering | None,
                saved: SavedModel | None) -> None:
    result = compiled.result
    width = max(len(s.pass_name) for s in result.snapshots)
    runtime = report["runtime_check"]
    each = runtime is not None and runtime["checked"] == "each"
    print(f"{'pass':<{width}}  {'nodes':>13}  {'rewrites':>8}  {'seconds':>8}  "
          + (f"{runtime['level']:<16}  " if each else "") + "verify")
    for entry in report["passes"]:
        nodes = f"{entry['nodes_before']} -> {entry['nodes_after']}"
        print(f"{entry['name']:<{width}}  {nodes:>13}  {entry['rewrites']:>8}  "
              f"{entry['seconds']:>8.3f}  " + (f"{runtime_cell(entry):<16}  " if each else "")
              + _verify_text(entry["verify"]))
    for snapshot in result.snapshots:
        for decline in snapshot.declined[:MAX_DECLINES_SHOWN]:
            print(f"declined  {snapshot.pass_name}: {decline.rule} at {decline.site}: "
                  f"{decline.reason}")
        if len(snapshot.declined) > MAX_DECLINES_SHOWN:
            print(f"declined  {snapshot.pass_name}: ... and "
                  f"{len(snapshot.declined) - MAX_DECLINES_SHOWN} more (see --json or the app)")
        for note in snapshot.notes:
            print(f"note      {snapshot.pass_name}: {note}")
    if result.verifier is not None:
        print(f"inputs    {result.verifier.describe_inputs()}")
    if runtime is not None:
        print(f"runtime   {runtime['level']}: {'ok' if runtime['ok'] else 'FAILED'}: "
              f"{runtime['summary']}")
    if lowering is not None:
        made = ", ".join(f"{n} {op}" for op, n in lowering.counts().items())
        print(f"onnxruntime: fused nodes became {made or 'nothing (none were fused)'}")
        if lowering.tolerance is not None:
            rtol, why = lowering.tolerance
            print(f"onnxruntime: {why}; outputs agree with the model's within {rtol:g} of "
                  f"their scale, not bit for bit")
        for record in lowering.nodes:
            if record.reason:
                print(f"inline    {record.fused_op} {record.node}: {record.reason}")
    decisions = compiled.decisions
    if decisions.target:
        print(f"target    {decisions.target}: {', '.join(decisions.target_readers)} planned "
              f"for it")
    if decisions.fixed_size_readers:
        print(f"sizes     {decisions.sizes.describe()}: all bound, "
              f"{', '.join(decisions.fixed_size_readers)} plans for fixed sizes")
    elif decisions.left_symbolic:
        chosen = decisions.sizes.text()
        print(f"sizes     {', '.join(decisions.left_symbolic)} left symbolic (the model keeps "
              f"accepting any size); the analyses price it at {chosen}: --bind {chosen} "
              f"folds their shape arithmetic away")
    print(f"{report['nodes_before']} -> {report['nodes_after']} nodes in "
          f"{result.seconds:.2f} s" + (f"; {saved.describe()}" if saved else ""))


def _verify_text(verify: dict | None) -> str:
    if verify is None:
        return "-"
    return f"{'ok' if verify['ok'] else 'FAILED'} (max abs err {verify['max_abs_err']:.2g})"
