"""The bundled sample models: listing them and resolving a name to a file.

Anywhere a model path is accepted, a sample name works too (``graphlab info bert_tiny_op13``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache

from compiler_core.errors import UnknownSampleError
from compiler_core.records import record_field

from .data_dirs import samples_dir


@dataclass(frozen=True)
class Sample:
    name: str
    path: str
    description: str
    exporter: str
    opset: int | None
    tags: tuple[str, ...]
    test_data: str | None
    notes: str = record_field(omit=True)
    # its symbolic dims' usual sizes (manifest)
    sizes: tuple[tuple[str, int], ...] = record_field(convert=dict, default=())
    teaches_pass: str | None = None   # the pass a teaching sample is about: the app opens on it

    json_derived = ("size_bytes",)

    @property
    def size_bytes(self) -> int:
        return os.path.getsize(self.path)


@lru_cache(maxsize=1)
def list_samples() -> tuple[Sample, ...]:
    folder = samples_dir()
    manifest = os.path.join(folder, "manifest.json")
    if not os.path.exists(manifest):
        return ()
    with open(manifest, encoding="utf-8") as handle:
        entries = json.load(handle)["samples"]
    return tuple(
        Sample(e["name"], os.path.join(folder, e["file"]), e.get("description", ""),
               e.get("exporter", ""), e.get("opset"), tuple(e.get("tags", ())),
               os.path.join(folder, e["test_data"]) if e.get("test_data") else None,
               e.get("notes", ""), tuple(e.get("sizes", {}).items()), e.get("teaches_pass"))
        for e in entries)


def get_sample(name: str) -> Sample | None:
    return next((s for s in list_samples() if s.name == name), None)


def size_hints(name_or_path: str) -> dict[str, int]:
    """The usual sizes of a sample's symbolic dims, by its name or its file ({} for any
    other model): the sizes analyses use where the user binds none."""
    sample = get_sample(name_or_path) or next(
        (s for s in list_samples() if os.path.exists(name_or_path)
         and os.path.samefile(s.path, name_or_path)), None)
    return dict(sample.sizes) if sample else {}


def resolve_model(name_or_path: str) -> str:
    """A path to an existing file, or the file of the sample with that name."""
    if os.path.exists(name_or_path):
        return name_or_path
    sample = get_sample(name_or_path)
    if sample is not None:
        return sample.path
    names = ", ".join(s.name for s in list_samples()) or "none installed"
    raise UnknownSampleError(f"{name_or_path!r} is neither a file nor a sample name",
                             where=name_or_path, hint=f"samples: {names}")
