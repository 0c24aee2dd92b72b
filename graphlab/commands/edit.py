"""`graphlab edit MODEL EDITS.json -o OUT.onnx`: change the model where the debugger shows the
problem, as data.

EDITS.json is a list of edits naming nodes and values as `graphlab show` prints them
(`compiler_core.editing`); each is checked before it applies and the list applies whole or
not at all (a refusal names the edit, exit status 2).  ``--effect`` runs the model before and
after in onnxruntime and says how much the outputs move.  ``--suggest`` lists the near misses
and declines of a pipeline that one edit makes fire, each tried, with its effect.
"""

from __future__ import annotations

from compiler_core.editing import KINDS
from compiler_core.editing.effect import numerical_effect
from compiler_core.editing.suggestions import suggest_edits
from compiler_core.errors import GraphLabError
from compiler_core.ir import load_model, save_model
from compiler_core.records import to_json

from ..samples import resolve_model, size_hints
from ..user_input import parse_bindings
from .common import (add_json_flag, add_model_argument, add_plugins_option, load_edited,
                     print_json, read_edits_file)

DEFAULT_PIPELINE = "O2"


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "edit", help="apply a JSON list of edits to a model (set an attribute or a constant, "
                     "bypass, delete, rewire, insert, rename), or suggest one-edit fixes")
    add_model_argument(parser)
    parser.add_argument("edits", metavar="EDITS.json", nargs="?",
                        help=f"a JSON list of edits; kinds: {', '.join(KINDS)}")
    parser.add_argument("-o", "--output", metavar="OUT.onnx",
                        help="write the edited model here (without it the edits are only "
                             "checked)")
    parser.add_argument("--effect", action="store_true",
                        help="run the model before and after the edits in onnxruntime and "
                             "say how much each output changes")
    parser.add_argument("--suggest", action="store_true",
                        help="list near misses and declines of the pipeline that one edit "
                             "makes fire (each edit tried), with its effect on the outputs")
    parser.add_argument("-p", "--pipeline", metavar="P", default=DEFAULT_PIPELINE,
                        help=f"with --suggest: the pipeline whose passes should fire "
                             f"(default {DEFAULT_PIPELINE})")
    parser.add_argument("--bind", metavar="k=v,...", default=None,
                        help="sizes of symbolic dims, for the inputs --effect runs on")
    add_plugins_option(parser)
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    if args.suggest:
        return _suggest(args)
    if not args.edits:
        raise GraphLabError("give an edit file (EDITS.json) or --suggest",
                            hint='an edit file holds e.g. [{"edit": "bypass", "node": "relu"}]')
    graph, edited = load_edited(args.model, args.edits)
    effect = None
    if args.effect:
        effect = numerical_effect(load_model(resolve_model(args.model)), graph,
                                  parse_bindings(args.bind) or size_hints(args.model))
    saved = save_model(graph, args.output) if args.output else None
    if args.json:
        print_json({"model": args.model, **to_json(edited),
                    "effect": to_json(effect) if effect else None,
                    "output": saved.path if saved else None})
        return 0
    for number, line in enumerate(edited.applied(), start=1):
        print(f"edit {number:<3} {line}")
    print(f"{edited.nodes_before} -> {edited.nodes_after} nodes; every edit checked "
          f"({_check_text(edited.type_check)})")
    if effect is not None:
        print(f"effect    {effect.summary()}")
    print(saved.describe() if saved else "nothing written (-o OUT.onnx writes "
                                                    "the edited model)")
    return 0


def _suggest(args) -> int:
    edits = read_edits_file(args.edits) if args.edits else []
    suggestions = suggest_edits(resolve_model(args.model), args.pipeline,
                                parse_bindings(args.bind), size_hints(args.model), edits)
    if args.json:
        print_json({"model": args.model, "pipeline": args.pipeline,
                    "suggestions": suggestions})
        return 0
    if not suggestions:
        print(f"no near miss or decline of {args.pipeline} that one edit makes fire")
        return 0
    for suggestion in suggestions:
        print(suggestion.describe())
    return 0


def _check_text(level: str) -> str:
    return {"strict": "names, cycles, onnx's checker and strict type and shape inference",
            "checker": "names, cycles and onnx's checker (the model fails strict inference "
                       "as given)",
            "none": "names and cycles (onnx's checker refuses the model as given)"}[level]
