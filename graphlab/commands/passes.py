"""`graphlab passes`: every pass (name, family, what it does) and the pipeline presets."""

from __future__ import annotations

from compiler_core.passes import PRESETS, all_passes
from compiler_core.passes.framework.pass_registry import DEFAULT_PRESET, PRESET_DESCRIPTIONS

from .common import add_json_flag, add_plugins_option, print_json


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("passes", help="list the compiler passes and presets")
    add_plugins_option(parser)
    add_json_flag(parser)
    parser.set_defaults(run=run)


def catalog() -> dict:
    passes = sorted(all_passes().values(), key=lambda p: (p.family, p.name))
    return {
        "passes": [{"name": p.name, "family": p.family, "description": p.description()}
                   for p in passes],
        "presets": [{"name": name, "passes": list(names),
                     "description": PRESET_DESCRIPTIONS.get(name, "")}
                    for name, names in PRESETS.items()],
        "default_preset": DEFAULT_PRESET,
    }


def run(args) -> int:
    info = catalog()
    if args.json:
        print_json(info)
        return 0
    width = max(len(p["name"]) for p in info["passes"])
    family = None
    for entry in info["passes"]:
        if entry["family"] != family:
            family = entry["family"]
            print(f"{family}:")
        print(f"  {entry['name']:<{width}}  {entry['description']}")
    print("presets:")
    for preset in info["presets"]:
        default = " (default)" if preset["name"] == info["default_preset"] else ""
        print(f"  {preset['name']}{default}: {preset['description']}")
        print(f"      {', '.join(preset['passes'])}")
    return 0
