"""Everything the inspector says about one node, as plain data (the panel only renders it).

Besides op, attributes and typed inputs/outputs, it answers the questions a pass debugger is
for: what did this pass do to the node, which rule made it and from what, which pass removed
it and what replaced it.
"""

from __future__ import annotations

from compiler_core.hardware.cost import OpCost, node_cost
from compiler_core.ir import Graph, Node, Value
from compiler_core.ir.dtypes import dtype_text, is_dtype_attribute
from compiler_core.ir.printer import format_attr
from compiler_core.ir.quantization_params import quantization_params
from compiler_core.records import to_json

from .comparison import status_of
from .graph_analyses import op_cost_of, sized_of
from .node_metrics import node_metrics
from .workbench import Workspace


def describe_node(ws: Workspace, step: int, node_id: int, target: str) -> dict | None:
    step = ws.clamp_step(step)
    before, after = ws.graphs_of_step(step)
    snapshot = ws.result.snapshots[step]
    graph = after if after.node_by_id(node_id) is not None else before
    node = graph.node_by_id(node_id) or _body_member(node_id, before, after)
    if node is None:
        return None
    metrics, metrics_note = node_metrics(_cost(ws, graph, node, target))
    return {
        "title": node.qualified_op,
        "name": node.name,
        "id": node.id,
        "scope": node.scope,
        "status": status_of(ws.comparison, node.id, snapshot.diff) if ws.comparison
        else _status_in_pass(node.id, snapshot.diff, snapshot.pass_name,
                              snapshot.declined),
        "changes": [] if ws.comparison else [to_json(c)
                                             for c in snapshot.diff.changes_of(node.id)],
        "attributes": [(k, dtype_text(v) if is_dtype_attribute(node.op_type, k)
                        else format_attr(v)) for k, v in sorted(node.attrs.items())],
        "inputs": [_value_row(v, "from") for v in node.inputs],
        "quantization": [to_json(q) for q in quantization_params(node)],
        "outputs": [_value_row(v, "to") for v in node.outputs],
        "metrics": metrics,
        "metrics_note": metrics_note,
        "history": [] if ws.comparison else _history(ws, node),   # two models: no passes
        "body": [f"{n.op_type}  {_relative(n.name, node.scope)}" for n in node.body.nodes]
        if node.body else [],
        "fused": node.body is not None,
    }


def _cost(ws: Workspace, graph: Graph, node: Node, target: str) -> OpCost | None:
    """The node's record in its graph's cost; a node inside a fused body, priced alone."""
    cost = op_cost_of(ws, graph, node.id, target)
    if cost is not None:
        return cost
    member = _body_member(node.id, sized_of(ws, graph)) or node
    try:
        return node_cost(member, target, ws.sizes.bindings)
    except Exception:  # noqa: BLE001 - a figure we cannot compute is not an app error
        return None


def _body_member(node_id: int, *graphs: Graph) -> Node | None:
    for graph in graphs:
        for node in graph.nodes:
            if node.body is not None and node.body.node_by_id(node_id) is not None:
                return node.body.node_by_id(node_id)
    return None


def _status_in_pass(node_id: int, diff, pass_name: str, declined=()) -> str:
    if node_id in diff.removed:
        return f"removed by this pass ({pass_name})"
    if node_id in diff.added:
        return f"added by this pass ({pass_name})"
    if node_id in diff.modified:
        wheres = [c.where for c in diff.changes_of(node_id)]
        return f"modified by this pass ({pass_name})" + (
            f": {', '.join(wheres)} changed" if wheres else "")
    for decline in declined:   # left as it was on purpose: say why
        if decline.node_id == node_id or any(n.id == node_id for n in decline.nodes):
            return (f"unchanged by this pass ({pass_name}): it declined to rewrite at "
                    f"{decline.site}: {decline.reason}")
        if decline.blocking is not None and decline.blocking.id == node_id:
            return (f"unchanged by this pass ({pass_name}); this node blocked its rewrite at "
                    f"{decline.site}: {decline.reason}")
    return f"unchanged by this pass ({pass_name})"


def _value_row(value: Value | None, direction: str) -> dict:
    if value is None:
        return {"name": "(omitted)", "type": "", "link": ""}
    if direction == "from":
        if value.producer is not None:
            link = f"from {value.producer.name}"
        elif value.is_initializer:
            link = "weight"
        else:
            link = "graph input" if value.is_graph_input else ""
    else:
        users = [n.name for n in value.users()]
        link = ("to " + ", ".join(users[:4]) + (f" +{len(users) - 4}" if len(users) > 4 else "")
                if users else "")
        if value.is_graph_output:
            link = (link + "; " if link else "") + "graph output"
    return {"name": value.name, "type": value.describe_type(), "link": link}


def _history(ws: Workspace, node: Node) -> list[str]:
    history = ws.history
    names = history.names
    passes = [s.pass_name for s in ws.result.snapshots]
    lines: list[str] = []
    made = node.provenance
    if made is not None:
        lines += _made_lines(ws, node, made)
    removed = history.removed_in.get(node.id)
    if removed is not None:
        line = f"removed by pass {removed + 1} ({passes[removed]})"
        replacement = history.replaced_by.get(node.id)
        if replacement is not None:
            line += f", replaced by {names.get(replacement, f'#{replacement}')}"
        lines.append(line)
    elif node.id in names:
        lines.append("kept until the end of the pipeline")
    return lines


def _made_lines(ws: Workspace, node: Node, made) -> list[str]:
    """How the node was made, with one count everywhere: the nodes its pass replaced (a
    fused node's body, the pass's "removed"), how many of them the pattern matched and which
    came along, and the input model's nodes those came from when earlier passes made some."""
    names = ws.history.names
    replaced = made.replaced_ids
    where = f" ({made.source})" if made.source else ""
    what = " (its body)" if node.body is not None and len(node.body) == len(replaced) else ""
    lines = [f"made by rule {made.rule}{where} in pass {made.pass_name} from "
             f"{_name_list([names.get(s, f'#{s}') for s in replaced], node.scope)}{what}"]
    pattern, match = _match_that_made(ws, node, made.pass_name)
    if match is not None and match.taken_along:
        along = [_relative(n.name, node.scope) for n in match.taken_along]
        lines.append(f"the pattern {pattern} matched {len(match.nodes)} of them; the "
                     f"rewrite took {len(along)} more along: {', '.join(along)}")
    if set(made.sources) != set(replaced):
        lines.append(f"those {len(replaced)} come from {len(made.sources)} nodes of the input "
                     f"model (earlier passes had rewritten some)")
    return lines


def _match_that_made(ws: Workspace, node: Node, pass_name: str):
    """(pattern name, match record) of the pass that made ``node`` whose rewrite made it."""
    for snapshot in ws.result.snapshots:
        if snapshot.pass_name != pass_name or node.id not in snapshot.diff.added:
            continue
        for report in snapshot.pattern_reports:
            for match in report.matches:
                if match.made is not None and match.made.id == node.id:
                    return report.name, match
    return None, None


def _relative(name: str, scope: str) -> str:
    prefix = scope.rstrip("/") + "/" if scope else ""
    return name[len(prefix):] if prefix and name.startswith(prefix) else name


def _name_list(names: list[str], scope: str, limit: int = 8) -> str:
    """'3 nodes: query/MatMul, key/MatMul, ...' with the node's own scope left out."""
    short = [_relative(n, scope) for n in names]
    if not short:
        return "nothing"
    text = ", ".join(short[:limit]) + (f", +{len(short) - limit} more" if len(short) > limit else "")
    return f"{len(short)} node{'s' if len(short) != 1 else ''}: {text}"
