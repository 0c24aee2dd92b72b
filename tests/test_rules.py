"""Rules as objects: a rule written the way a user would, run as a rule set's pass; provenance
that points at the rule's source line; pattern records that survive pickling."""

from __future__ import annotations

import inspect
import pickle
from pathlib import Path

from onnx import helper

from compiler_core.ir import Graph, Node
from compiler_core.passes import PassContext, PassManager
from compiler_core.passes.fusion.skip_layernorm import SkipLayerNormRule
from compiler_core.passes.framework.rules import CYCLE, Rule, RuleSet
from compiler_core.patterns import Match, Pattern, PatternRecord, any_value, op
from compiler_core.records import to_json
from compiler_core.verify import Verifier
from passes_helpers import F, build, load_sample, ops, tensor

ROOT = Path(__file__).resolve().parents[1]


class MulAddRule(Rule):
    """Mul then Add -> one fused MulAdd node; a square (Mul of a value by itself) is left."""

    name = "mul_add"

    def pattern(self) -> Pattern:
        mul = op("Mul", any_value().bind("a"), any_value().bind("b")).bind("mul")
        return op("Add", mul.allow_external_uses(), any_value().bind("c")).bind("add")

    def check(self, match: Match) -> str | None:
        return "a square is left for another rule" if match["a"] is match["b"] else None

    def rewrite(self, graph: Graph, ctx: PassContext, match: Match) -> Node | str:
        return self.fuse(graph, ctx, [match["mul"], match["add"]], "MulAdd",
                         operands=[match["a"], match["b"], match["c"]])


# reruns decline the same square again: recorded once
FUSE_MUL_ADD = RuleSet("fuse_mul_add", "fusion", (MulAddRule(),), fixed_point=True,
                       doc="Fuse Mul + Add (a test's own rule set, never registered).")


def three_sites() -> Graph:
    """A clean Mul + Add, a square + Add (declined), and a Mul + Add whose addend is computed
    from the Mul (fusing the two would make a cycle through Neg)."""
    nodes = [helper.make_node("Mul", ["x", "y"], ["m1"], name="mul_clean"),
             helper.make_node("Add", ["m1", "z"], ["o1"], name="add_clean"),
             helper.make_node("Mul", ["x", "x"], ["m2"], name="mul_square"),
             helper.make_node("Add", ["m2", "z"], ["o2"], name="add_square"),
             helper.make_node("Mul", ["y", "z"], ["m3"], name="mul_loop"),
             helper.make_node("Neg", ["m3"], ["n3"], name="neg_loop"),
             helper.make_node("Add", ["m3", "n3"], ["o3"], name="add_loop")]
    inputs = [tensor(n, F, [2, 3]) for n in "xyz"]
    return build(nodes, inputs, [tensor(f"o{i}", F, [2, 3]) for i in (1, 2, 3)])


def run_pass(the_pass, graph: Graph):
    """Run a pass the way the PassManager does (fixed point), and merge its results."""
    ctx = PassContext(pass_name=the_pass.name)
    result = the_pass.run(graph, ctx)
    while the_pass.fixed_point:
        step = the_pass.run(graph, ctx)
        result.merge(step)
        if step.rewrites == 0:
            break
    return result


def test_user_rule_fuses_declines_once_and_refuses_a_cycle():
    graph = three_sites()
    reference = Verifier(graph.copy())
    result = run_pass(FUSE_MUL_ADD.as_pass(), graph)
    graph.check()
    assert result.rewrites == 1 and ops(graph)["MulAdd"] == 1
    assert graph.node_by_name("add_square").op_type == "Add"
    assert graph.node_by_name("add_loop").op_type == "Add"
    assert reference.check(graph).ok
    declines = {d.site: (d.rule, d.reason) for d in result.declined}
    assert declines == {"add_square": ("mul_add", "a square is left for another rule"),
                        "add_loop": ("mul_add", CYCLE)}
    assert len(result.declined) == 2  # the second run's declines were merged, not repeated
    assert result.declined[0].node_id == graph.node_by_name("add_square").id
    (record,) = result.pattern_reports  # the last run's: the two sites still there
    assert record.name == "mul_add"
    assert [m.root.name for m in record.matches] == ["add_square", "add_loop"]


def test_a_rule_node_records_the_rules_source_line():
    graph = three_sites()
    run_pass(FUSE_MUL_ADD.as_pass(), graph)
    (fused,) = [n for n in graph.nodes if n.op_type == "MulAdd"]
    line = inspect.getsourcelines(MulAddRule)[1]
    assert fused.provenance.rule == "mul_add"
    assert fused.provenance.source == f"tests/test_rules.py:{line}"
    assert to_json(fused.provenance)["source"] == fused.provenance.source


def test_library_rule_source_points_at_its_class():
    path, line = SkipLayerNormRule.source().rsplit(":", 1)
    assert path == "compiler_core/passes/fusion/skip_layernorm.py"
    text = (ROOT / path).read_text().splitlines()[int(line) - 1]
    assert text.startswith("class SkipLayerNormRule(")


def test_fused_nodes_of_the_o2_pipeline_name_their_rule_source():
    result = PassManager("O2", bindings={"batch": 1, "seq": 8}).run(load_sample("bert_tiny_op13"))
    made = [n.provenance for n in result.final.nodes
            if n.op_type in ("Attention", "SkipLayerNormalization")]
    assert made and all(p.source.startswith("compiler_core/passes/fusion/") for p in made)


def test_pattern_records_and_declines_survive_pickling():
    result = PassManager("O2").run(load_sample("teach_conv_bn"))
    shot = next(s for s in result.snapshots if s.pass_name == "fold_batchnorm")
    assert shot.declined and all(isinstance(r, PatternRecord) for r in shot.pattern_reports)
    copy = pickle.loads(pickle.dumps(result))
    again = copy.snapshots[shot.index]
    assert again.pattern_reports == shot.pattern_reports
    assert again.declined == shot.declined
    assert to_json(again)["patterns"] == to_json(shot)["patterns"]
    (report,) = [r for r in again.pattern_reports if r.name == "conv_bn"]
    (miss,) = report.near_misses
    assert copy.initial.node_by_id(miss.blocking_node.id).name == "relu_side"
