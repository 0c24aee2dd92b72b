"""Transposes that cancel, merge, or fold into the matrix multiply that reads them."""

from __future__ import annotations

import onnx

from ...ir import Graph, Node, Value
from ...ir.computed_tensors import TransposedTensor
from ...patterns import Pattern, any_value, op
from ...patterns.texts import format_attr
from ..framework.base import Pass, PassContext, PassResult
from ..analyses.constants import remove_dead
from ..framework.rewrite import bypass_or_decline, replace_node, sweep_by_op
from ..framework.pass_registry import register_pass

SWAP_2D = (1, 0)
GEMM_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE}  # what every runtime's Gemm takes


def permutation(node: Node) -> tuple[int, ...] | None:
    """The Transpose's perm; the default (absent) reverses the dims, which needs the rank."""
    if "perm" in node.attrs:
        return tuple(int(p) for p in node.attrs["perm"])
    rank = node.inputs[0].rank
    return None if rank is None else tuple(reversed(range(rank)))


def _perms(value: Value) -> tuple[tuple | None, tuple | None]:
    """The perms of the Transpose producing ``value`` and of the Transpose before it."""
    second = value.producer
    return permutation(second.inputs[0].producer), permutation(second)


def _perms_cancel(value: Value, _: dict) -> bool:
    first, second = _perms(value)
    return (first is not None and second is not None and len(first) == len(second)
            and all(first[second[i]] == i for i in range(len(second))))


def _perms_found(value: Value, _: dict) -> str:
    first, second = _perms(value)
    return f"perm {format_attr(second)} after perm {format_attr(first)}"


def transpose_pair() -> Pattern:
    """Two Transposes in a row whose permutations cancel (the second undoes the first).

    Why: both are pure data movement; removing the pair saves two full copies of the tensor.
    Layout passes leave such pairs behind all the time.

    Bindings: ``first``, ``second`` (the Transpose nodes, in data-flow order), ``input``.
    """
    first = op("Transpose", any_value().bind("input")).bind("first")
    return op("Transpose", first).bind("second").where(
        _perms_cancel, "perms that cancel", _perms_found, needs_bindings=False).described_as(
        "Two Transposes in a row whose permutations cancel each other.").named("transpose_pair")


def _kept_too(weight: Value, transpose: Node, ctx: PassContext) -> str | None:
    """Why a transposed copy of ``weight`` would store a large weight twice (another node
    still reads it as it is: a tied embedding), or None."""
    others = [n for n in weight.users() if n is not transpose]
    if not weight.is_initializer or not others or weight.stored.nbytes <= ctx.fold_size_limit:
        return None
    return (f"{weight.name} is also read by {others[0].name}: a transposed copy would store "
            f"its {weight.stored.nbytes:,} bytes twice (more than the folding limit of "
            f"{ctx.fold_size_limit:,})")


def _transpose_producer(value: Value) -> Node | None:
    producer = value.producer
    if producer is None or producer.op_type != "Transpose" or producer.domain:
        return None
    return producer


@register_pass
class CancelTransposes(Pass):
    """Remove transposes that cancel, and fold the rest into the matrix multiply reading them.

    Transposing twice is one transpose with the composed permutation — none at all when the
    composition is the identity.  Gemm can read either operand transposed (its transA/transB
    flags), so a Transpose feeding it becomes a flag; a 2-D MatMul of a transposed operand
    becomes such a Gemm; and a transposed constant weight is stored transposed instead —
    unless other nodes still read it as it is and it is larger than the folding limit (a tied
    embedding): two copies of it would cost more than the transpose.
    """

    name = "cancel_transposes"
    family = "cleanup"
    fixed_point = True

    def patterns(self) -> list[Pattern]:
        return [transpose_pair()]

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        return sweep_by_op(graph, ctx, {"Transpose": (_simplify_transpose,),
                                        "Gemm": (_flags_for_gemm,),
                                        "MatMul": (_matmul_operands,)})


def _simplify_transpose(graph: Graph, ctx: PassContext, node: Node,
                        result: PassResult) -> None:
    """An identity Transpose goes; two in a row cancel or become one."""
    perm = permutation(node)
    if perm is None:
        return
    if perm == tuple(range(len(perm))):
        bypass_or_decline(graph, node, node.inputs[0], "identity_transpose", result)
        return
    inner = _transpose_producer(node.inputs[0])
    inner_perm = permutation(inner) if inner is not None else None
    if inner_perm is None or len(inner_perm) != len(perm):
        return
    composed = tuple(inner_perm[p] for p in perm)
    if composed == tuple(range(len(perm))):
        bypass_or_decline(graph, node, inner.inputs[0], "transpose_pair_cancels", result)
    else:
        replace_node(graph, ctx, "transpose_pair_merges", node, "Transpose",
                     [inner.inputs[0]], {"perm": composed}, absorbed=[inner])
        result.rewrites += 1


def _flags_for_gemm(graph: Graph, ctx: PassContext, node: Node, result: PassResult) -> None:
    """A 2-D Transpose feeding Gemm becomes its transA/transB flag."""
    for index, flag in ((0, "transA"), (1, "transB")):
        transpose = _transpose_producer(node.inputs[index])
        if transpose is not None and permutation(transpose) == SWAP_2D:
            graph.set_node_attr(node, flag, 0 if node.attr(flag, 0) else 1)
            node.replace_input(index, transpose.inputs[0])
            remove_dead(graph, [transpose])
            result.rewrites += 1


def _matmul_operands(graph: Graph, ctx: PassContext, node: Node, result: PassResult) -> None:
    """A transposed weight stored transposed; a 2-D MatMul of a transposed operand a Gemm."""
    transposed = {}
    for index, value in enumerate(node.inputs[:2]):
        transpose = _transpose_producer(value)
        perm = permutation(transpose) if transpose is not None else None
        if perm is None:
            continue
        weight = transpose.inputs[0]
        kept_too = _kept_too(weight, transpose, ctx)
        if weight.is_initializer and kept_too is None:
            name = f"{weight.name}_transposed"
            folded = TransposedTensor(name, weight.constant_data(), perm)
            node.replace_input(index, graph.add_initializer(name, folded))
            remove_dead(graph, [transpose])
            result.rewrites += 1
            continue
        if kept_too is not None:
            result.decline(transpose, "transposed_weight", kept_too)
        if perm == SWAP_2D:
            transposed[index] = transpose
    ranks = [v.rank for v in node.inputs]
    if transposed and ranks == [2, 2] and node.outputs[0].elem_type in GEMM_TYPES:
        inputs = [transposed[i].inputs[0] if i in transposed else node.inputs[i]
                  for i in range(2)]
        replace_node(graph, ctx, "matmul_of_transpose_to_gemm", node, "Gemm", inputs,
                     {"transA": int(0 in transposed), "transB": int(1 in transposed)},
                     absorbed=list(transposed.values()))
        result.rewrites += 1
