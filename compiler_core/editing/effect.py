"""What an edit changes in what the model computes, measured in onnxruntime.

Unlike a pass, an edit is meant to change the model; the user deciding whether to keep it
wants to know by how much.  Both models run on the same inputs (generated as the numerical
check makes them, at sizes the model runs at, or the user's) and each output's largest change
is given absolutely and relative to the output's scale.  Inputs and outputs are paired by
position (by name when the edits removed an output), so an edit that renames one is still
compared.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Graph
from ..records import record_field
from ..verify import DEFAULT_RTOL, Verifier, compare_outputs, run, with_inference_semantics


_MISSING = "no longer computed (the edits removed it)"


@dataclass(frozen=True)
class OutputChange:
    """One output: its largest change, absolute and relative to its scale."""

    name: str
    max_abs_change: float = record_field(digits=6)
    relative_change: float = record_field(digits=6)   # max abs change / the output's scale
    scale: float = record_field(digits=6)
    note: str = record_field(default="", omit_empty=True)


@dataclass(frozen=True)
class NumericalEffect:
    """Every output's change, and the inputs both models ran on."""

    outputs: tuple[OutputChange, ...]
    inputs: str
    tolerance: float = DEFAULT_RTOL

    json_derived = ("changed", "max_relative_change", "summary")

    @property
    def max_relative_change(self) -> float:
        return max((o.relative_change for o in self.outputs), default=0.0)

    @property
    def changed(self) -> bool:
        """Does any output move by more than the numerical check's tolerance?"""
        return any(o.relative_change > self.tolerance or o.note for o in self.outputs)

    def summary(self) -> str:
        """One line: how much the edit moves the outputs."""
        if not self.changed:
            return (f"the outputs do not change (within {self.tolerance:g} of their scale) "
                    f"on {self.inputs}")
        worst = max(self.outputs, key=lambda o: (bool(o.note), o.relative_change))
        if worst.note:
            return f"output {worst.name}: {worst.note}"
        return (f"output {worst.name} changes by up to {worst.max_abs_change:.3g} "
                f"({worst.relative_change:.2%} of its scale {worst.scale:.3g}) on "
                f"{self.inputs}")


def numerical_effect(before: Graph, after: Graph, bindings: dict[str, int] | None = None,
                     inputs: dict | None = None) -> NumericalEffect:
    """Run ``before`` and ``after`` on the same inputs in onnxruntime and measure every
    output's change (raises a VerificationError when either cannot run)."""
    verifier = Verifier(before, inputs, bindings)
    feed = {new.name: verifier.inputs[old.name]
            for old, new in zip(before.inputs, after.inputs) if old.name in verifier.inputs}
    got = run(with_inference_semantics(after), feed)
    # paired by position while the edits kept every output (a renamed one is still itself);
    # by name once they removed one
    renamed = dict(zip([v.name for v in after.outputs], [v.name for v in before.outputs])) \
        if len(after.outputs) == len(before.outputs) else {}
    report = compare_outputs(verifier.reference_outputs,
                             {renamed.get(name, name): value for name, value in got.items()})
    changes = tuple(OutputChange(o.name, o.max_abs_err,
                                 o.max_abs_err / o.scale if o.scale else o.max_abs_err,
                                 o.scale, _MISSING if o.note.startswith("output missing")
                                 else o.note) for o in report.outputs)
    return NumericalEffect(changes, verifier.describe_inputs())
