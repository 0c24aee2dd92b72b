"""The pass registry and the pipeline presets users pick from (`graphlab passes`).

A pipeline entry is a pass or preset name, a ``Pass`` instance, or a *pass source*: any object
with ``as_pass()`` returning a Pass (how a set of rewrite rules joins a pipeline).  The same
three kinds can be registered under a name, which is how plugins add passes and rule sets.
"""

from __future__ import annotations

from typing import Protocol, Sequence, Union, runtime_checkable

from ...errors import GraphLabError
from .base import Pass
from .properties import unknown_properties


@runtime_checkable
class PassSource(Protocol):
    """Anything that turns into a pass: e.g. a rule set run by a generic rewrite pass."""

    def as_pass(self) -> Pass: ...


PipelineEntry = Union[str, Pass, PassSource]
_Registered = Union[type[Pass], Pass]   # a class is instantiated per use, an instance shared

_PASSES: dict[str, _Registered] = {}


def register_pass(item):
    """Make a pass available by its name: a class decorator, or a call with a Pass instance or
    a pass source (registered as the pass it turns into).  Returns ``item``."""
    entry = item.as_pass() if isinstance(item, PassSource) else item
    if not (isinstance(entry, Pass) or isinstance(entry, type) and issubclass(entry, Pass)):
        raise TypeError(f"cannot register {item!r}: not a Pass, a Pass subclass or a pass "
                        f"source (an object with as_pass())")
    label = entry.__name__ if isinstance(entry, type) else type(entry).__name__
    if not entry.name:
        raise ValueError(f"{label} has no name")
    unknown = unknown_properties(tuple(entry.requires) + tuple(entry.ensures))
    if unknown:
        raise ValueError(f"{label} names unknown properties {unknown}")
    if entry.name in _PASSES and _PASSES[entry.name] is not entry:
        raise ValueError(f"two passes are named {entry.name!r}")
    _PASSES[entry.name] = entry
    return item


def all_passes() -> dict[str, _Registered]:
    """Every registered pass, a class or an instance with ``name``, ``family`` and
    ``description()`` (importing the package imports every family, through the presets)."""
    return dict(_PASSES)


def get_pass(name: str) -> Pass:
    passes = all_passes()
    if name not in passes:
        raise GraphLabError(f"unknown pass {name!r}",
                            where=name, hint="`graphlab passes` lists the passes and presets")
    entry = passes[name]
    return entry() if isinstance(entry, type) else entry


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


def resolve_passes(spec: str | Sequence[PipelineEntry] | None) -> list[Pass]:
    """A preset, a comma-separated list, or a list mixing names, Pass instances and pass
    sources -> the passes to run, in order."""
    if spec is None or isinstance(spec, str):
        return [get_pass(name) for name in resolve_pipeline(spec)]
    passes: list[Pass] = []
    for entry in spec:
        if isinstance(entry, str):
            passes += [get_pass(name) for name in resolve_pipeline([entry])]
        elif isinstance(entry, Pass):
            passes.append(entry)
        elif isinstance(entry, PassSource):
            passes.append(_checked_pass(entry.as_pass(), entry))
        else:
            raise GraphLabError(f"cannot run {entry!r} as a pass",
                                hint="a pipeline entry is a pass or preset name, a Pass "
                                     "instance, or an object with as_pass()")
    if not passes:
        raise GraphLabError("the pipeline is empty", hint="name a preset or some passes")
    return passes


def _checked_pass(made, source) -> Pass:
    if not isinstance(made, Pass):
        raise GraphLabError(f"{source!r}.as_pass() returned {type(made).__name__}, not a Pass")
    return made
