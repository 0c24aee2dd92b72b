"""Run models with chosen intermediate values exposed as outputs, in a child onnxruntime.

Marking a value as a graph output is how onnxruntime hands back an intermediate tensor.  The
models run with onnxruntime's optimizer off (the graph as written is what is compared) and in a
child process, since the models a user bisects are often the ones that crash onnxruntime.
"""

from __future__ import annotations

import numpy as np

from ..errors import GraphLabError, RunFailedError
from ..ir import Graph, Value, model_for_runtime
from ..runtime_check import run_isolated_many
from ..verify import with_inference_semantics


def with_exposed(graph: Graph, values: list[Value]) -> Graph:
    """A copy of ``graph`` whose outputs are its own followed by ``values`` (those of them
    with a known element type: onnxruntime needs one for an output)."""
    copy = with_inference_semantics(graph)
    outputs = list(copy.outputs)
    seen = {v.name for v in outputs}
    for value in values:
        mine = copy.values.get(value.name)
        if mine is not None and mine.name not in seen and mine.elem_type is not None:
            outputs.append(mine)
            seen.add(mine.name)
    copy.set_outputs(outputs)
    return copy


def run_exposed(models: list[tuple[Graph, list[Value]]], inputs: dict[str, np.ndarray]
                ) -> list[dict[str, np.ndarray]]:
    """Every model run once on ``inputs`` (each fed the arrays it has inputs for) with its
    values exposed; the outputs by name, one dict per model.  A model that fails is a
    GraphLabError naming it and what onnxruntime said."""
    jobs = []
    for graph, values in models:
        exposed = with_exposed(graph, values)
        with model_for_runtime(exposed) as model:
            data = model if isinstance(model, bytes) else open(model, "rb").read()
        names = {v.name for v in graph.inputs}
        jobs.append((data, [{k: v for k, v in inputs.items() if k in names}], "disabled"))
    outcomes = run_isolated_many(jobs, level="disabled")
    results = []
    for (graph, _), outcome in zip(models, outcomes):
        if outcome.stage == "run":
            raise RunFailedError(f"model {graph.name!r} does not run on these inputs: "
                                 f"{outcome.error}", where=graph.name, cause=outcome.error,
                                 hint="give inputs it runs on with --inputs, or sizes with "
                                      "--bind")
        if not outcome.ok:
            raise GraphLabError(f"model {graph.name!r} with its intermediate values exposed "
                                f"{outcome.describe()}", where=graph.name,
                                hint="a model onnxruntime cannot run cannot be compared: "
                                     "graphlab reduce --until crash (or load-error) shrinks "
                                     "it to the nodes that fail")
        results.append(outcome.outputs[0])
    return results
