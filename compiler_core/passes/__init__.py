"""Compiler passes, the registry of pipelines, and the PassManager that snapshots each pass."""

from .base import Decline, Pass, PassContext, PassResult
from .instruments import Instrument, PassStep
from .manager import PassManager, PipelineResult, Snapshot
from .registry import (PRESETS, PassSource, all_passes, get_pass, register, resolve_passes,
                       resolve_pipeline)
from . import catalog  # noqa: E402,F401 - registers every pass and defines the presets

__all__ = ["Decline", "Instrument", "PRESETS", "Pass", "PassContext", "PassManager",
           "PassResult", "PassSource", "PassStep", "PipelineResult", "Snapshot", "all_passes",
           "get_pass", "register", "resolve_passes", "resolve_pipeline"]
