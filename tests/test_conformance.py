"""Round-trip conformance over onnx's backend node tests (import -> export -> onnxruntime).

The pass rate over the cases onnxruntime itself passes must stay at 100%.
"""

from __future__ import annotations

import pytest

from conformance import collect_cases, optimized, original_passes, round_trip


@pytest.fixture(scope="module")
def runnable_cases():
    cases = [c for c in collect_cases() if original_passes(c)]
    assert len(cases) > 1000, "onnxruntime should pass most onnx node tests; setup is broken"
    return cases


def test_every_case_onnxruntime_passes_round_trips(runnable_cases):
    failures = {c.name: problem for c in runnable_cases if (problem := round_trip(c))}
    rate = 1 - len(failures) / len(runnable_cases)
    assert not failures, f"pass rate {rate:.2%}; failing: {dict(list(failures.items())[:10])}"


def test_the_default_pipeline_keeps_every_case_correct(runnable_cases):
    """Other opsets and ops than the samples': O2 over every node test, outputs unchanged."""
    failures = {c.name: problem for c in runnable_cases if (problem := optimized(c, "O2"))}
    assert not failures, f"{len(failures)} cases broken: {dict(list(failures.items())[:10])}"
