"""`graphlab memory MODEL`: the arena plan — each intermediate tensor's offset and lifetime,
the arena's peak beside the naive total and the lower bound."""

from __future__ import annotations

from compiler_core.hardware.memory import DEFAULT_ALIGNMENT, plan_memory
from compiler_core.records import to_json

from .common import add_json_flag, add_model_argument, print_json
from .model_options import add_pipeline_options, analysed_graphs
from ..units import format_bytes

LARGEST_SHOWN = 10


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("memory", help="plan intermediate tensors into one arena: "
                                                  "offsets, lifetimes, peak vs lower bound")
    add_model_argument(parser)
    add_pipeline_options(parser)
    parser.add_argument("--align", type=int, default=DEFAULT_ALIGNMENT, metavar="N",
                        help=f"round every buffer up to N bytes (default {DEFAULT_ALIGNMENT})")
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    analysed = analysed_graphs(args)
    plan = to_json(plan_memory(analysed.priced_final, analysed.bindings,
                               alignment=args.align))
    if args.json:
        print_json({**analysed.head(), **plan})
        return 0
    print("\n".join(analysed.head_lines()))
    print_text(plan)
    return 0


def print_text(plan: dict) -> None:
    peak, bound, naive = plan["peak_bytes"], plan["lower_bound_bytes"], plan["naive_bytes"]
    print(f"arena peak   {format_bytes(peak)}  (this plan)")
    print(f"lower bound  {format_bytes(bound)}  (most bytes live at one step"
          + (f"; the plan is {peak / bound:.3f}x it)" if bound else ")"))
    print(f"naive        {format_bytes(naive)}  (every tensor its own buffer)")
    buffers = plan["buffers"]
    in_place = sum(1 for b in buffers if b["reuses"])
    print(f"{len(buffers)} tensors over {len(plan['steps'])} steps, {in_place} reusing a dying "
          f"input's buffer in place")
    outside = plan["outside_arena"]
    print(f"outside the arena: {len(outside['inputs'])} inputs "
          f"({format_bytes(sum(i['size'] or 0 for i in outside['inputs']))}), "
          f"{len(outside['outputs'])} outputs "
          f"({format_bytes(sum(o['size'] or 0 for o in outside['outputs']))}), "
          f"{outside['constants']['count']} constants "
          f"({format_bytes(outside['constants']['bytes'])})")
    if buffers:
        print("largest buffers:")
        print(f"  {'offset':>10} {'size':>10} {'steps':>11}  tensor")
        for b in sorted(buffers, key=lambda b: (-b["size"], b["first"]))[:LARGEST_SHOWN]:
            steps = f"{b['first']}-{b['last']}"
            print(f"  {b['offset']:>10} {format_bytes(b['size']):>10} {steps:>11}  {b['tensor']}")
    fused = plan["fused_intermediates"]
    if fused:
        kept = sum(f["bytes"] for f in fused)
        print(f"fused nodes keep {format_bytes(kept)} of intermediates out of the arena "
              f"({sum(len(f['tensors']) for f in fused)} tensors in {len(fused)} nodes)")
    for note in plan["notes"]:
        print(f"note: {note}")
