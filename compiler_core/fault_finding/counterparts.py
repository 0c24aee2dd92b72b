"""Which value of model B stands for which value of model A, so the two can be compared.

Two sources of evidence, never a guess:

- **Provenance**, when B was made from A by GraphLab's passes: a node that kept its id is the
  same node, output for output; a node a pass made stands for the nodes it replaced — each
  output of a fused node for the output of the body node that computes it, otherwise (one
  output) for the one value its replaced nodes hand to the rest of the graph — the output of
  the last node it replaced.  A node that stands for several such values (three MatMuls merged
  into one) has no counterpart.
- **The model diff's alignment**, for two models that share no ids (two exports, onnxruntime's
  optimized model): a matched pair of nodes pairs its outputs by position; a value no matched
  node produces pairs with the value of the same name, element type and rank on the other side
  (onnxruntime's fusions keep the name of the value they replace).

Graph inputs pair by name.  A value left without a counterpart is listed, not paired.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Graph, Node, Value

SAME_NODE, PROVENANCE, ALIGNMENT, NAME = "same node", "provenance", "alignment", "same name"


@dataclass(frozen=True)
class Counterpart:
    """A value of A and the value of B that computes the same thing, and how that is known."""

    a: Value
    b: Value
    how: str


def computed_values(graph: Graph) -> list[Value]:
    """The values nodes compute (not inputs, initializers or Constant outputs), in the
    graph's topological order: what a comparison can look at."""
    return [value for node in graph.nodes if not _is_constant_node(node)
            for value in node.outputs if value is not None and value.is_tensor]


def by_provenance(a: Graph, b: Graph, through: str = "sources") -> list[Counterpart]:
    """Counterparts of B (made from A by passes) in A.  ``through``: "replaced" when B is one
    pass's output and A its input, "sources" when A is the input model of a whole pipeline."""
    order = {node.id: i for i, node in enumerate(a.nodes)}
    claims: dict[str, tuple[int, Counterpart]] = {}   # A's value -> (B position, claim)
    for position, node in enumerate(b.nodes):
        for a_value, b_value, how in _claims(a, node, order, through):
            if (_alike(a_value, b_value) and
                    (a_value.name not in claims or claims[a_value.name][0] < position)):
                claims[a_value.name] = (position, Counterpart(a_value, b_value, how))
    return _with_inputs(a, b, [claim for _, claim in claims.values()])


def _claims(a: Graph, node: Node, order: dict[int, int], through: str):
    """(A value, B value, how) for each output of B's ``node`` that has a counterpart."""
    same = a.node_by_id(node.id)
    if same is not None and same.op_type == node.op_type:
        for a_value, b_value in zip(same.outputs, node.outputs):
            if a_value is not None and b_value is not None:
                yield a_value, b_value, SAME_NODE
        return
    if node.provenance is None:
        return
    ids = node.provenance.sources if through == "sources" else node.provenance.replaced_ids
    replaced = sorted((a.node_by_id(i) for i in ids if i in order), key=lambda n: order[n.id])
    if not replaced:
        return
    found = False
    if node.body is not None:
        for b_value, body_out in zip(node.outputs, node.body.outputs):
            made = body_out.producer
            source = a.node_by_id(made.id) if made is not None else None
            if b_value is not None and source is not None and source.op_type == made.op_type:
                found = True
                yield source.outputs[body_out.output_index], b_value, PROVENANCE
    live = [v for v in node.outputs if v is not None]
    if not found and len(live) == 1:
        escaping = _escaping(replaced) or [replaced[-1].outputs[0]]
        if len(escaping) == 1 and escaping[0] is not None and _alike(escaping[0], live[0]):
            yield escaping[0], live[0], PROVENANCE


def _escaping(nodes: list[Node]) -> list[Value]:
    """The values these nodes compute that something outside them reads (or the graph
    returns)."""
    inside = {n.id for n in nodes}
    return [v for n in nodes for v in n.outputs if v is not None and (
        v.is_graph_output or any(user.id not in inside for user, _ in v.uses))]


def by_alignment(a: Graph, b: Graph) -> list[Counterpart]:
    """Counterparts of two models that share no ids: the model diff's node pairs, then
    values by name where no matched node computes them."""
    from ..model_diff.align import align

    alignment = align(a, b).alignment
    how_found = alignment.how
    pairs: list[Counterpart] = []
    taken_a: set[str] = set()
    taken_b: set[str] = set()
    for a_id, b_id in alignment.a_to_b.items():
        na, nb = a.node_by_id(a_id), b.node_by_id(b_id)
        if _is_constant_node(na) or len(na.outputs) != len(nb.outputs):
            continue
        for a_value, b_value in zip(na.outputs, nb.outputs):
            if a_value is not None and b_value is not None and _alike(a_value, b_value):
                pairs.append(Counterpart(a_value, b_value,
                                         f"{ALIGNMENT} ({how_found[a_id]})"))
                taken_a.add(a_value.name)
                taken_b.add(b_value.name)
    a_values = {v.name: v for v in computed_values(a)}
    for b_value in computed_values(b):
        a_value = a_values.get(b_value.name)
        if (a_value is not None and a_value.name not in taken_a and b_value.name not in taken_b
                and _alike(a_value, b_value)):
            pairs.append(Counterpart(a_value, b_value, NAME))
    return _with_inputs(a, b, pairs)


def _with_inputs(a: Graph, b: Graph, pairs: list[Counterpart]) -> list[Counterpart]:
    b_inputs = {v.name: v for v in b.inputs}
    return [Counterpart(v, b_inputs[v.name], NAME) for v in a.inputs
            if v.name in b_inputs] + pairs


def _alike(a: Value, b: Value) -> bool:
    """The same element type, and no known size that differs (symbolic dims agree with any)."""
    if a.elem_type != b.elem_type:
        return False
    if a.shape is None or b.shape is None:
        return True
    return len(a.shape) == len(b.shape) and all(
        not (isinstance(x, int) and isinstance(y, int)) or x == y
        for x, y in zip(a.shape, b.shape))


def _is_constant_node(node: Node) -> bool:
    return node.op_type == "Constant" and node.domain in ("", "ai.onnx")
