"""Hardware targets: the data files in `targets/`, loaded and checked into `Target` records.

A target is data, not code, so a user can describe their own chip in a JSON file and pass its
path wherever a target name is accepted. Every built-in file cites where its figures come from
(`sources`) and says in `notes` which figures are published and which are assumed.

Peak rates per dtype, and the fallback when a dtype is not listed (`Target.peak`):
  1. the dtype is listed: its own peak;
  2. otherwise the narrowest listed dtype at least as wide as the one asked for (a wider
     datapath runs narrower values at its own rate), the lower peak on a tie;
  3. otherwise (the type is wider than anything the chip runs natively, e.g. float32 on the
     int8-only TPU v1) the widest listed dtype's peak. That is optimistic: real emulation is
     slower. `Target.peak_dtype` names the dtype whose rate was used, so a view can say so.
With no dtype given, the target's default dtype is used: the first one its file lists.

A target measured on this machine (`graphlab targets --measure`, `compiler_core.profiling.machine`)
is written to the user's data folder (`user_targets_dir`), not into the package, and carries a
`measured` record saying when, how and with how many threads, and the rates of the kinds of
op that run at a rate of their own (`rate_kinds`, `Target.rate`); it is found by name like a
built-in one.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from compiler_core.errors import GraphLabError
from compiler_core.hardware.dtypes import ELEMENT_BYTES, canonical_dtype, element_bytes
from compiler_core.hardware.rate_kinds import RATE_KINDS
from compiler_core.records import record_field, to_json

TARGETS_DIR = Path(__file__).with_name("targets")
DEFAULT_TARGET = "asic32"

# What each field means: the hint a user gets when their file gets it wrong.
FIELD_HELP = {
    "name": "a short id such as 'my_npu' (letters, digits, '_' or '-')",
    "display_name": "a human-readable name such as 'My NPU (256 MACs)'",
    "peak_ops_per_s": "an object {dtype: peak operations per second}, e.g. {\"int8\": 3.2e13}; "
                      "one multiply-accumulate counts as 2 operations",
    "bandwidth_bytes_per_s": "the off-chip memory bandwidth in bytes per second, e.g. 2.4e12",
    "sram_bytes": "the on-chip buffer (scratchpad) capacity in bytes, a positive integer",
    "array_rows": "rows of the systolic array (processing elements), a positive integer",
    "array_cols": "columns of the systolic array, a positive integer",
    "clock_hz": "the array's clock frequency in Hz, e.g. 1e9",
    "notes": "text saying which figures are published and which are assumed",
    "sources": "a list of {\"title\", \"url\" or \"publication\", \"supports\"} objects citing "
               "where the figures come from",
    "array_count": "optional: how many such arrays the chip has (default 1)",
    "supported_ops": "optional: a list of the ONNX op types the chip runs, e.g. [\"Conv\", "
                     "\"Relu\"]; the others fall back to the host CPU (default: every op)",
    "memory": "optional: the memory beside the array, {\"sram_kb\": {\"ifmap\", \"filter\", "
              "\"ofmap\": kilobytes each}, \"bandwidth_words_per_cycle\": {the same three: "
              "DRAM words (bytes) per cycle}} (default: sram_bytes split in three, every "
              "interface at the target's bytes per cycle)",
    "energy_table": "optional: the per-access energy table the systolic energy uses, a name "
                    "from compiler_core/hardware/energy_tables (default: horowitz45)",
    "measured": "optional: for a target measured on a machine, {\"when\": ISO time, \"how\": "
                "text, \"threads\": count, \"runtime\": name and version, "
                "\"overhead_seconds_per_op\": the time an op costs beyond its work, "
                "\"ops_per_s_by_kind\": {kind: the float32 rate of a kind of op that runs "
                "at its own rate, e.g. \"conv\"}, \"recast_bytes_per_s\": bytes read plus "
                "written per second by a float16 to float32 Cast}",
    "host": "optional: the CPU the chip is attached to, {\"peak_ops_per_s\": its float32 "
            "rate, \"bandwidth_bytes_per_s\": its memory bandwidth, \"link_bytes_per_s\": "
            "the link to the chip} (partitioning weighs offloading against it)",
}
OPTIONAL_FIELDS = ("array_count", "supported_ops", "host", "memory", "energy_table",
                   "measured")
REQUIRED_FIELDS = tuple(f for f in FIELD_HELP if f not in OPTIONAL_FIELDS)
_HOST_KEYS = ("peak_ops_per_s", "bandwidth_bytes_per_s", "link_bytes_per_s")
_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]+$")


class TargetError(GraphLabError, ValueError):
    """A target name is unknown, or a target file is missing a field or has a bad value."""


@dataclass(frozen=True)
class Source:
    """One citation: where a target's figures come from and which of them it supports."""

    title: str
    supports: str
    url: str | None = record_field(omit_none=True, default=None)
    publication: str | None = record_field(omit_none=True, default=None)


@dataclass(frozen=True)
class Host:
    """The CPU beside an accelerator: where unsupported ops run, and the link data crosses."""

    peak_ops_per_s: float
    bandwidth_bytes_per_s: float
    link_bytes_per_s: float

    def seconds(self, flops: float, bytes_moved: float) -> float:
        """The roofline bound on the host: max(flops / peak, bytes / bandwidth)."""
        return max(flops / self.peak_ops_per_s, bytes_moved / self.bandwidth_bytes_per_s)


def _memory_as_in_file(memory) -> dict:
    """A MemoryConfig as a target file states it: its sizes and bandwidths alone."""
    return to_json(memory, only=("sram_kb", "bandwidth_words_per_cycle"))


@dataclass(frozen=True)
class Target:
    """A chip as the roofline and the systolic simulator see it (see the module docstring)."""

    name: str
    display_name: str
    peak_ops_per_s: Mapping[str, float] = field(hash=False)
    bandwidth_bytes_per_s: float
    sram_bytes: int
    array_rows: int
    array_cols: int
    clock_hz: float
    notes: str
    sources: tuple[Source, ...]
    array_count: int = 1
    # None: the chip runs every op
    supported_ops: frozenset[str] | None = record_field(omit_none=True, default=None)
    host: Host | None = record_field(omit_none=True, default=None)
    # None: derived (systolic.memory_config)
    memory: "MemoryConfig | None" = record_field(omit_none=True, default=None,
                                                 convert=_memory_as_in_file)
    energy_table: str = "horowitz45"
    # None: priced from papers; else how, when and with what this machine was measured
    measured: Mapping[str, Any] | None = record_field(omit_none=True, default=None, hash=False)
    path: str | None = record_field(omit=True, default=None, compare=False)

    @property
    def overhead_seconds_per_op(self) -> float:
        """What one op costs beyond its arithmetic and traffic (measured targets only; 0 for
        the targets priced from papers)."""
        return float((self.measured or {}).get("overhead_seconds_per_op", 0.0))

    @property
    def recast_bytes_per_s(self) -> float:
        """The rate of a float16 to float32 Cast, bytes read plus written (measured targets;
        the memory bandwidth where it was not measured)."""
        return float((self.measured or {}).get("recast_bytes_per_s",
                                                self.bandwidth_bytes_per_s))

    def __getstate__(self) -> dict:
        """Pickled with its peaks as a plain dict (a read-only mapping does not pickle), so a
        record that names its target travels to and from builder processes."""
        return {**self.__dict__, "peak_ops_per_s": dict(self.peak_ops_per_s),
                "measured": None if self.measured is None else dict(self.measured)}

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            read_only = name in ("peak_ops_per_s", "measured") and value is not None
            object.__setattr__(self, name, MappingProxyType(value) if read_only else value)

    @property
    def default_dtype(self) -> str:
        """The first dtype the target's file lists: its headline rate."""
        return next(iter(self.peak_ops_per_s))

    @property
    def bytes_per_cycle(self) -> float:
        """Off-chip bytes that arrive per array clock cycle."""
        return self.bandwidth_bytes_per_s / self.clock_hz

    def peak_dtype(self, dtype: str | None = None) -> str:
        """The listed dtype whose peak `peak(dtype)` uses (itself when listed)."""
        if dtype is None:
            return self.default_dtype
        wanted = canonical_dtype(dtype)
        if wanted in self.peak_ops_per_s:
            return wanted
        listed = list(self.peak_ops_per_s.items())
        wider = [(element_bytes(d), rate, d) for d, rate in listed
                 if element_bytes(d) >= element_bytes(wanted)]
        if wider:
            return min(wider)[2]
        return min((-element_bytes(d), rate, d) for d, rate in listed)[2]

    def peak(self, dtype: str | None = None) -> float:
        """Peak operations per second for `dtype` (fallback rule: module docstring)."""
        return self.peak_ops_per_s[self.peak_dtype(dtype)]

    def rate(self, dtype: str | None = None, kind: str | None = None) -> float:
        """The rate an op of ``kind`` (`rate_kinds.rate_kind`) runs at in ``dtype``: its kind's
        measured rate on a measured target (float32, the dtype it was measured in), else the
        dtype's peak, as on every target priced from papers."""
        by_kind = (self.measured or {}).get("ops_per_s_by_kind", {})
        if kind in by_kind and self.peak_dtype(dtype) == "float32":
            return float(by_kind[kind])
        return self.peak(dtype)

    def ridge_point(self, dtype: str | None = None) -> float:
        """Arithmetic intensity (ops/byte) where the roofline's two limits meet."""
        return self.peak(dtype) / self.bandwidth_bytes_per_s


def list_targets() -> list[str]:
    """Names of the built-in targets, sorted."""
    return list(_builtin_names())


@lru_cache(maxsize=None)
def _builtin_names() -> tuple[str, ...]:
    """The files shipped in the package do not change while it runs: list them once."""
    return tuple(sorted(p.stem for p in TARGETS_DIR.glob("*.json")))


def user_targets_dir() -> Path:
    """Where measured targets are written: ``$GRAPHLAB_DATA_DIR/targets``, else
    ``$XDG_DATA_HOME/graphlab/targets`` (``~/.local/share/graphlab/targets``)."""
    own = os.environ.get("GRAPHLAB_DATA_DIR")
    if own:
        return Path(own) / "targets"
    data = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data) / "graphlab" / "targets"


def measured_targets() -> list[str]:
    """Names of the targets measured on this machine (files in `user_targets_dir`), sorted."""
    folder = user_targets_dir()
    return sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []


def get_target(name_or_path: str | os.PathLike | Target | None = None) -> Target:
    """A built-in target by name, or a user's target from the path of a JSON file.

    None gives the default target (`asic32`); a `Target` is returned as it is.
    """
    if name_or_path is None:
        name_or_path = DEFAULT_TARGET
    if isinstance(name_or_path, Target):
        return name_or_path
    text = os.fspath(name_or_path)
    if text in _builtin_names():
        return _load_builtin(text)
    if _NAME_PATTERN.match(text) and text in measured_targets():
        return load_target_file(user_targets_dir() / f"{text}.json")  # re-measured: re-read
    if text.endswith(".json") or os.sep in text or "/" in text or os.path.isfile(text):
        return load_target_file(text)
    raise TargetError(f"unknown target {text!r}", where=text,
                      hint=f"use one of {', '.join(list_targets())}, "
                           "or the path of a JSON target file")


@lru_cache(maxsize=None)
def _load_builtin(name: str) -> Target:
    return load_target_file(TARGETS_DIR / f"{name}.json")


def load_target_file(path: str | os.PathLike) -> Target:
    """Read and check one target file; a `TargetError` names the file and the bad field."""
    where = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        raise TargetError(f"target file {where!r} does not exist", where=where,
                          hint=f"check the path, or use a built-in target: "
                               f"{', '.join(list_targets())}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise TargetError(f"target file {where!r} cannot be read: {err}", where=where,
                          hint="pass a readable UTF-8 JSON file") from None
    except json.JSONDecodeError as err:
        raise TargetError(f"target file {where!r} is not valid JSON: {err.msg} at line "
                          f"{err.lineno} column {err.colno}", where=where,
                          hint="fix the JSON syntax") from None
    return target_from_dict(data, where)


def target_from_dict(data: Any, where: str = "<target>") -> Target:
    """Check a decoded target file and build its `Target` (`where` names it in errors)."""
    if not isinstance(data, dict):
        raise TargetError(f"target file {where!r} must hold a JSON object, "
                          f"found {type(data).__name__}", where=where,
                          hint=f"write an object with the fields {', '.join(REQUIRED_FIELDS)}")
    unknown = sorted(set(data) - set(FIELD_HELP))
    if unknown:
        raise TargetError(f"target file {where!r}: unknown field {unknown[0]!r}", where=where,
                          hint=f"remove it or fix its spelling; known fields: "
                               f"{', '.join(FIELD_HELP)}")
    for name in REQUIRED_FIELDS:
        if name not in data:
            raise TargetError(f"target file {where!r}: field {name!r} is missing", where=where,
                              hint=f"add {name!r}: {FIELD_HELP[name]}")

    def bad(name: str, problem: str) -> TargetError:
        return TargetError(f"target file {where!r}: field {name!r} {problem}", where=where,
                           hint=f"{name!r} must be {FIELD_HELP[name]}")

    def text(name: str) -> str:
        value = data[name]
        if not isinstance(value, str) or not value.strip():
            raise bad(name, "must be a non-empty string")
        return value

    def positive(name: str, value: Any = None, integer: bool = False) -> float:
        value = data[name] if value is None else value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad(name, f"must be a number, found {value!r}")
        if not math.isfinite(value) or value <= 0:
            raise bad(name, f"must be positive and finite, found {value!r}")
        if integer:
            if value != int(value):
                raise bad(name, f"must be a whole number, found {value!r}")
            return int(value)
        return float(value)

    name = text("name")
    if not _NAME_PATTERN.match(name):
        raise bad("name", f"has characters other than letters, digits, '_' and '-': {name!r}")
    peaks = data["peak_ops_per_s"]
    if not isinstance(peaks, dict) or not peaks:
        raise bad("peak_ops_per_s", "must be a non-empty object")
    peak_ops: dict[str, float] = {}
    for dtype, rate in peaks.items():
        try:
            key = canonical_dtype(dtype)
        except ValueError:
            raise bad("peak_ops_per_s", f"lists unknown dtype {dtype!r} (known dtypes: "
                                        f"{', '.join(sorted(ELEMENT_BYTES))})") from None
        peak_ops[key] = positive("peak_ops_per_s", rate)
    return Target(
        name=name,
        display_name=text("display_name"),
        peak_ops_per_s=MappingProxyType(peak_ops),
        bandwidth_bytes_per_s=positive("bandwidth_bytes_per_s"),
        sram_bytes=positive("sram_bytes", integer=True),
        array_rows=positive("array_rows", integer=True),
        array_cols=positive("array_cols", integer=True),
        clock_hz=positive("clock_hz"),
        notes=text("notes"),
        sources=_sources(data["sources"], bad),
        array_count=positive("array_count", data.get("array_count", 1), integer=True),
        supported_ops=_supported_ops(data.get("supported_ops"), bad),
        host=_host(data.get("host"), bad, positive),
        memory=_memory(data.get("memory"), bad),
        energy_table=_energy_table(data.get("energy_table"), bad),
        measured=_measured(data.get("measured"), bad),
        path=where,
    )


def _supported_ops(value: Any, bad) -> frozenset[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(op, str) and op.strip()
                                              for op in value):
        raise bad("supported_ops", "must be a list of op type names")
    return frozenset(value)


def _host(value: Any, bad, positive) -> Host | None:
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != set(_HOST_KEYS):
        raise bad("host", f"must be an object with exactly the keys {', '.join(_HOST_KEYS)}")
    return Host(*(positive("host", value[key]) for key in _HOST_KEYS))


def _memory(value: Any, bad):
    if value is None:
        return None
    from compiler_core.hardware.systolic.memory_config import memory_from_dict

    try:
        return memory_from_dict(value)
    except GraphLabError as err:
        raise bad("memory", err.message) from None


def _measured(value: Any, bad) -> Mapping[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(value.get(k), str) and value[k]
                                              for k in ("when", "how")):
        raise bad("measured", "must be an object with 'when' and 'how' texts")
    overhead = value.get("overhead_seconds_per_op", 0.0)
    if isinstance(overhead, bool) or not isinstance(overhead, (int, float)) or overhead < 0:
        raise bad("measured", f"has a bad overhead_seconds_per_op: {overhead!r}")
    recast = value.get("recast_bytes_per_s", 1.0)
    if isinstance(recast, bool) or not isinstance(recast, (int, float)) \
            or not math.isfinite(recast) or recast <= 0:
        raise bad("measured", f"has a bad recast_bytes_per_s: {recast!r} (a positive rate)")
    by_kind = value.get("ops_per_s_by_kind", {})
    if not isinstance(by_kind, dict) or not all(
            kind in RATE_KINDS and not isinstance(rate, bool) and isinstance(rate, (int, float))
            and math.isfinite(rate) and rate > 0 for kind, rate in by_kind.items()):
        raise bad("measured", f"has a bad ops_per_s_by_kind: {by_kind!r} (kinds "
                              f"{', '.join(RATE_KINDS)}, each with a positive rate)")
    return MappingProxyType(dict(value))


def _energy_table(value: Any, bad) -> str:
    if value is None:
        return "horowitz45"
    from compiler_core.hardware.energy import list_tables

    if value not in list_tables():
        raise bad("energy_table", f"names no table: {value!r}")
    return value


def _sources(value: Any, bad) -> tuple[Source, ...]:
    if not isinstance(value, list) or not value:
        raise bad("sources", "must be a non-empty list")
    sources = []
    for i, entry in enumerate(value):
        if not isinstance(entry, dict):
            raise bad("sources", f"entry {i} is not an object")
        for key in ("title", "supports"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise bad("sources", f"entry {i} has no {key!r} text")
        if not (entry.get("url") or entry.get("publication")):
            raise bad("sources", f"entry {i} has neither 'url' nor 'publication'")
        extra = set(entry) - {"title", "supports", "url", "publication"}
        if extra:
            raise bad("sources", f"entry {i} has unknown key {sorted(extra)[0]!r}")
        sources.append(Source(title=entry["title"], supports=entry["supports"],
                              url=entry.get("url"), publication=entry.get("publication")))
    return tuple(sources)
