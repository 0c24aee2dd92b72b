"""SiLU / Swish and the SwiGLU gate written out in primitive ops become one node each."""

from __future__ import annotations

from ...ir import Graph, Node
from ...ir.contrib_shapes import MS_DOMAIN
from ...ir.dtypes import is_float
from ...patterns import Match, Pattern, any_value, op
from ...patterns.library.common import as_float, scalar_const
from ...wording import plural
from ..framework.base import PassContext
from ..framework.pass_registry import register_pass
from ..framework.rules import Rule, RuleSet

SWISH = "Swish"    # ONNX's name for it; the lowering imports these spellings
SWIGLU = "SwiGLU"
QUICK_GELU_ALPHA = 1.702   # onnxruntime's QuickGelu when its alpha is omitted


def _swish(x: Pattern) -> Pattern:
    """x·Sigmoid(x), or x·Sigmoid(α·x); the Sigmoid is matched first so it binds x."""
    scaled = op("Mul", x, scalar_const().bind("alpha", as_float))
    return op("Mul", op("Sigmoid", scaled | x).bind("sigmoid"), x)


def _alpha(match: Match) -> float:
    alpha = match["alpha"]
    return 1.0 if alpha is None else float(alpha)


class SwiGluRule(Rule):
    """Pattern ``swiglu`` -> one fused SwiGLU(gate, up) node computing gate·Sigmoid(α·gate)·up,
    whose body is the original ops; ``alpha`` is recorded."""

    name = "swiglu"

    def pattern(self) -> Pattern:
        """The gate of a SwiGLU MLP: SiLU(gate)·up, the SiLU written out (x·Sigmoid(x), or
        with α) or already one op (ONNX's Swish, onnxruntime's QuickGelu: x·Sigmoid(α·x));
        gate and up are usually two projections of the same input (Llama, Qwen2, Mistral:
        down(silu(gate(x)) · up(x))).

        Why: the gated MLP's element-wise part is three passes over its widest activation
        (Sigmoid, ·gate, ·up) with two intermediates in memory; as one kernel it reads gate
        and up once and writes the product once, leaving the MLP as its GEMMs plus one
        element-wise op.

        Bindings: ``gate``, ``up`` (values), ``alpha`` (float, None for 1).
        """
        gate = any_value().bind("gate")
        swish = (_swish(gate)
                 | op("Swish", gate).bind("alpha", lambda n: n.attrs.get("alpha", 1.0))
                 | op("QuickGelu", gate, domain=MS_DOMAIN).bind(
                     "alpha", lambda n: n.attrs.get("alpha", QUICK_GELU_ALPHA)))
        up = any_value().bind("up").where(lambda v, _: not v.is_constant,
                                          "a tensor computed at run time (not a constant scale)",
                                          lambda v, _: "a constant", needs_bindings=False)
        return op("Mul", swish, up).described_as(
            "The gate of a SwiGLU MLP: SiLU(gate)·up, with the SiLU written out or as Swish.")

    def rewrite(self, graph: Graph, ctx: PassContext, match: Match) -> Node | str:
        gate, up = match["gate"], match["up"]
        if not is_float(gate.elem_type):
            return f"the gate {gate.name!r} is not a floating-point tensor"
        return self.fuse(graph, ctx, match.nodes, SWIGLU, {"alpha": _alpha(match)},
                         operands=[gate, up])


class SiluRule(Rule):
    """Pattern ``silu`` -> a fused Swish(X, alpha) node whose body is the original ops.  Not
    the standard Swish of opset 24: onnxruntime 1.32 runs that op only in models of opset 24
    exactly, and a recognition must not make a model that no longer loads."""

    name = "silu"

    def pattern(self) -> Pattern:
        """SiLU (Swish with β = 1) written out: x·Sigmoid(x); or Swish x·Sigmoid(α·x) (α =
        1.702 is CLIP's QuickGELU).  Mul operands in either order.

        Why: two element-wise passes (and the Sigmoid's intermediate in memory) become one
        kernel (onnxruntime's QuickGelu, ONNX's Swish from opset 24).

        Bindings: ``input`` (x), ``alpha`` (float, None for 1), ``sigmoid`` (node).
        """
        return _swish(any_value().bind("input")).described_as(
            "SiLU / Swish written out: x·Sigmoid(x), or x·Sigmoid(α·x).")

    def rewrite(self, graph: Graph, ctx: PassContext, match: Match) -> Node | str:
        x = match["input"]
        if not is_float(x.elem_type):
            return f"the input {x.name!r} is not a floating-point tensor"
        return self.fuse(graph, ctx, match.nodes, SWISH, {"alpha": _alpha(match)}, operands=[x])


def _note(graph: Graph, made: list[Node]) -> str:
    gates = sum(1 for node in made if node.op_type == SWIGLU)
    return f"made {plural(len(made), 'node')}: {gates} SwiGLU, {len(made) - gates} Swish"


RECOGNIZE_SILU = register_pass(RuleSet(
    "recognize_silu", "recognition", note=_note,
    rules=(SwiGluRule(), SiluRule()),  # the gate first: a SwiGLU contains a SiLU
    doc="""Replace the SwiGLU gate SiLU(gate)·up — the element-wise part of an LLM's gated
    MLP, down(silu(gate(x)) · up(x)) — by one SwiGLU node, and any other x·Sigmoid(x) (SiLU,
    or Swish x·Sigmoid(α·x)) by one Swish node.

    The gated MLP's element-wise part is three passes over its widest activation (Sigmoid,
    ·gate, ·up) that keep two intermediates in memory; as one kernel it reads gate and up
    once and writes the product once, so the MLP is its GEMMs plus one element-wise op.  A
    lone SiLU saves one pass and its Sigmoid's intermediate.  Both are fused nodes whose
    bodies are the original ops (``--runtime onnxruntime`` writes Swish as QuickGelu).
    """))
