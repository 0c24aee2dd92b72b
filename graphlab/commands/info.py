"""`graphlab info MODEL`: op histogram, inputs/outputs, parameters, opsets."""

from __future__ import annotations

from compiler_core.ir.summary import summarize

from .common import add_json_flag, add_model_argument, load_graph, print_json


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("info", help="summarise a model: ops, signature, parameters")
    add_model_argument(parser)
    add_json_flag(parser)
    parser.set_defaults(run=run)


def _shape_text(shape) -> str:
    if shape is None:
        return "[?]"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def run(args) -> int:
    summary = summarize(load_graph(args.model))
    if args.json:
        print_json(summary)
        return 0
    print(f"model {summary['name']}  ({summary['producer'] or 'unknown producer'}, "
          f"IR v{summary['ir_version']})")
    print("opsets: " + ", ".join(f"{d}={v}" for d, v in summary["opset"].items()))
    print(f"{summary['nodes']} nodes, {summary['params']:,} parameters in "
          f"{summary['initializers']} initializers")
    for kind in ("inputs", "outputs"):
        print(f"{kind}:")
        for item in summary[kind]:
            print(f"  {item['name']}: {item['dtype']}{_shape_text(item['shape'])}")
    print("ops:")
    for op, count in summary["op_histogram"].items():
        print(f"  {count:6d}  {op}")
    return 0
