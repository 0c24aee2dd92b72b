"""The pass registry and the pipeline presets users pick from (`graphlab passes`)."""

from __future__ import annotations

from ..errors import GraphLabError
from .base import Pass

_PASSES: dict[str, type[Pass]] = {}


def register(cls: type[Pass]) -> type[Pass]:
    """Class decorator: make a pass available by its name."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    if cls.name in _PASSES and _PASSES[cls.name] is not cls:
        raise ValueError(f"two passes are named {cls.name!r}")
    _PASSES[cls.name] = cls
    return cls


def all_passes() -> dict[str, type[Pass]]:
    """Every registered pass (the package's __init__ imports the catalog, which registers)."""
    return dict(_PASSES)


def get_pass(name: str) -> Pass:
    passes = all_passes()
    if name not in passes:
        raise GraphLabError(f"unknown pass {name!r}",
                            where=name, hint="`graphlab passes` lists the passes and presets")
    return passes[name]()


PRESETS: dict[str, list[str]] = {}
PRESET_DESCRIPTIONS: dict[str, str] = {}
DEFAULT_PRESET = "O2"


def define_preset(name: str, passes: list[str], description: str) -> None:
    PRESETS[name] = passes
    PRESET_DESCRIPTIONS[name] = description


def resolve_pipeline(spec: str | list[str] | None) -> list[str]:
    """A preset name or a comma-separated list of pass names -> validated pass names."""
    if spec is None or spec == "" or spec == "default":
        spec = DEFAULT_PRESET
    if isinstance(spec, str) and spec in PRESETS:
        return list(PRESETS[spec])
    names = spec if isinstance(spec, list) else [s.strip() for s in spec.split(",") if s.strip()]
    expanded: list[str] = []
    for name in names:
        if name in PRESETS:
            expanded += PRESETS[name]
        elif name in _PASSES:
            expanded.append(name)
        else:
            raise GraphLabError(f"unknown pass or preset {name!r}", where=name,
                                hint="presets: " + ", ".join(PRESETS) +
                                     "; `graphlab passes` lists every pass")
    if not expanded:
        raise GraphLabError("the pipeline is empty", hint="name a preset or some passes")
    return expanded
