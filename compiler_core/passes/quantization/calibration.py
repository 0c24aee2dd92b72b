"""Calibration: run the float model on sample inputs and record the range of chosen tensors.

Static quantization fixes every activation's scale at compile time, so the compiler must know
which values each tensor takes.  It runs the model (in onnxruntime, with inference semantics)
on calibration batches and keeps each watched tensor's minimum and maximum over all of them.
Real inputs give ranges that match deployment (`graphlab compile --calibrate FILE.npz`);
without them a few generated valid inputs are used, which makes the pipeline runnable on any
model but gives ranges only as representative as random data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ir import Graph
from ...verify import fit_inputs, make_inputs, run_batches, with_inference_semantics
from ..framework.base import PassContext

GENERATED_BATCHES = 4  # seeds of generated inputs when the user gives none


@dataclass
class Calibration:
    """Where the batches came from, and the observed range of every watched tensor."""

    source: str
    ranges: dict[str, tuple[float, float]]


def calibration_batches(graph: Graph, ctx: PassContext) -> tuple[list[dict], str]:
    """The batches to calibrate on and a phrase saying where they came from."""
    if ctx.calibration_inputs:
        batches = [b for given in ctx.calibration_inputs for b in fit_batch(graph, given)]
        return batches, f"{len(batches)} given calibration batch(es)"
    plan = fit_inputs(graph, ctx.bindings).plan   # sizes the model runs at
    batches = [make_inputs(graph, seed=seed, plan=plan) for seed in range(GENERATED_BATCHES)]
    sizes = f" at {plan.describe()}" if plan.sizes else ""
    return batches, (f"{GENERATED_BATCHES} batches of generated random inputs{sizes} (give "
                     f"real inputs for representative ranges)")


def fit_batch(graph: Graph, batch: dict) -> list[dict]:
    """``batch`` split along axis 0 into pieces the graph accepts when its inputs have a fixed
    leading size (a model specialized to batch 1 calibrated on a file of 100 images)."""
    pieces = 1
    for value in graph.inputs:
        array = batch.get(value.name)
        fixed = value.shape[0] if value.shape else None
        if array is not None and array.ndim and isinstance(fixed, int) and fixed > 0 \
                and array.shape[0] != fixed and array.shape[0] % fixed == 0:
            pieces = max(pieces, array.shape[0] // fixed)
    if pieces == 1:
        return [batch]
    return [{name: np.array_split(array, pieces)[i] for name, array in batch.items()}
            for i in range(pieces)]


def observe_ranges(graph: Graph, names: list[str], batches: list[dict]
                   ) -> dict[str, tuple[float, float]]:
    """Min and max of each named value over every batch (values never finite are left out)."""
    probe = with_inference_semantics(graph)
    input_names = {v.name for v in probe.inputs}
    extra = [probe.values[n] for n in names
             if n not in input_names and not probe.values[n].is_graph_output]
    probe.set_outputs(list(probe.outputs) + extra)
    ranges: dict[str, tuple[float, float]] = {}
    for batch, results in zip(batches, run_batches(probe, batches)):
        for name in names:
            data = np.asarray(batch[name] if name in input_names else results[name])
            finite = data[np.isfinite(data)]
            if not finite.size:
                continue
            lo, hi = float(finite.min()), float(finite.max())
            if name in ranges:
                lo, hi = min(lo, ranges[name][0]), max(hi, ranges[name][1])
            ranges[name] = (lo, hi)
    return ranges


def calibrate(graph: Graph, names: list[str], ctx: PassContext) -> Calibration:
    """Observe the ranges of ``names`` on the context's (or generated) calibration batches."""
    batches, source = calibration_batches(graph, ctx)
    return Calibration(source, observe_ranges(graph, names, batches))
