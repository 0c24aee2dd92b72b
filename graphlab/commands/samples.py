"""`graphlab samples`: the bundled models, with what each is there to teach."""

from __future__ import annotations

from ..samples import list_samples
from .common import add_json_flag, print_json


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("samples", help="list the bundled sample models")
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    samples = list_samples()
    if args.json:
        print_json({"samples": samples})
        return 0
    width = max((len(s.name) for s in samples), default=4)
    for sample in samples:
        print(f"{sample.name:<{width}}  {sample.description}")
    return 0
