"""No pass of O2 does more than O(n log n) work: counted, not timed.

Each phase of a compile — reading the model, the decisions and snapshots around the passes,
every pass, writing the model — runs under a trace function that counts the Python lines it
runs (every turn of a loop) and the calls it makes (``sys.settrace``).  A count depends on the
code and the graph, not on the machine or its load, so the same compile of a generated graph
four times bigger must count at most n log n's growth in every phase: a pass that rescans the
graph per rewrite, or copies it per site, grows sixteen-fold and fails here with its name.
(Work inside one builtin call, such as ``list.remove`` on a long list, is one step:
`benchmarks/scale.py` times that.)
"""

from __future__ import annotations

import math
import sys
from collections import Counter

import pytest

from benchmarks.app import generated_model
from benchmarks.generated_graphs import element_wise_chain
from compiler_core.compilation import compile_model
from compiler_core.ir import load_model, to_bytes
from compiler_core.passes import Instrument

SMALL, BIG = 500, 2000
OUTSIDE = "around the passes (decisions, copies, snapshots)"


class StepCounter(Instrument):
    """Lines and calls per phase: the phase set by the caller, or the pass running."""

    def __init__(self):
        self.counts: Counter[str] = Counter()
        self.phase = ""

    def hook(self, frame, event, arg):
        """A trace function: counts every line run (a loop's every turn) and every call."""
        self.counts[self.phase] += 1
        return self.hook

    def before_pass(self, step) -> None:
        self.phase = f"pass {step.index + 1} {step.name}"

    def after_pass(self, step) -> None:
        self.phase = OUTSIDE


def count_compile(model_bytes: bytes) -> Counter[str]:
    counter = StepCounter()
    previous = sys.gettrace()   # a coverage tool's, given back afterwards
    sys.settrace(counter.hook)
    try:
        counter.phase = "load"
        graph = load_model(model_bytes)
        counter.phase = OUTSIDE
        final = compile_model(graph, "O2", instruments=[counter]).final
        counter.phase = "write"
        to_bytes(final)
    finally:
        sys.settrace(previous)
    return counter.counts


def _scoped(nodes: int):
    return generated_model(layers=nodes // 100, branches=4, depth=24)


@pytest.mark.slow
@pytest.mark.parametrize("make", [element_wise_chain, _scoped], ids=["chain", "scoped"])
def test_every_phase_grows_at_most_n_log_n(make):
    small = count_compile(make(SMALL).SerializeToString())
    big = count_compile(make(BIG).SerializeToString())
    assert small.keys() == big.keys() and len(small) > 30   # every pass counted, both sizes
    allowed = BIG * math.log(BIG) / (SMALL * math.log(SMALL)) * 1.05   # n log n, 5 % slack
    grown = {phase: big[phase] / small[phase] for phase in small}
    too_fast = {phase: f"{small[phase]} -> {big[phase]} steps ({ratio:.1f}x)"
                for phase, ratio in grown.items() if ratio > allowed}
    assert not too_fast, f"grew faster than n log n (at most {allowed:.2f}x): {too_fast}"
    # the counts measure the work: the passes that fuse every site grow with the graph
    assert grown["pass 29 fuse_elementwise"] > 3.5
