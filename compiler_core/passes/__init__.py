"""Compiler passes: ``framework/`` (what a pass is, the PassManager, the pass registry, rules),
``analyses/`` (what the families share: constants, shape facts, evaluation), one subpackage
per family (cleanup, folding, fusion, ...) and ``presets`` (the pipelines users pick)."""

from .framework.base import Decline, Pass, PassContext, PassResult
from .framework.instruments import Instrument, PassStep
from .framework.manager import PassManager, PipelineResult, Snapshot
from .framework.pass_registry import (PRESETS, PassSource, all_passes, get_pass, register_pass,
                                      resolve_passes, resolve_pipeline)
from . import presets  # noqa: E402,F401 - registers every pass and defines the presets

__all__ = ["Decline", "Instrument", "PRESETS", "Pass", "PassContext", "PassManager",
           "PassResult", "PassSource", "PassStep", "PipelineResult", "Snapshot", "all_passes",
           "get_pass", "register_pass", "resolve_passes", "resolve_pipeline"]
