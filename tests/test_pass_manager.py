"""The PassManager's open ends: pass instances and pass sources in a pipeline, instruments
around each pass, --print-ir-after, a failing pass named with its node, declared properties
checked, and plugins (files and entry points) for the CLI and the app's builders."""

from __future__ import annotations

import functools
import json
import textwrap

import pytest
from onnx import helper

from compiler_core import plugins
from compiler_core.errors import PassFailedError, PluginError, PropertyViolationError
from compiler_core.ir import format_graph
from compiler_core.passes import (Instrument, Pass, PassContext, PassManager, PassResult,
                                  get_pass, register_pass)
from compiler_core.passes.framework.properties import violations
from compiler_core.passes.framework.rewrite import replace_by_op
from graphlab.app.build_launchers import LocalLauncher
from graphlab.app.builds import BuildJob, Builds
from graphlab.app.shared_storage import SharedStorage
from graphlab.cli import main

from passes_helpers import build, load_sample, ops, tensor


def relu_chain():
    """x -> Identity -> Relu -> Relu -> y, with a second reader of the first Relu (z)."""
    return build([helper.make_node("Identity", ["x"], ["a"], name="alias"),
                  helper.make_node("Relu", ["a"], ["b"], name="/block/Relu"),
                  helper.make_node("Relu", ["b"], ["y"], name="/block/Relu_1"),
                  helper.make_node("Neg", ["b"], ["z"], name="/other/Neg")],
                 [tensor("x", shape=["n", 4])], [tensor("y", shape=["n", 4]),
                                                 tensor("z", shape=["n", 4])])


class DropNeg(Pass):
    """Test pass: turns every Neg into an Abs (a visible change that renames nothing)."""

    name = "test_neg_to_abs"
    family = "test"

    def run(self, graph, ctx):
        for node in graph.nodes_of_type("Neg"):
            graph.remove_node(node)
            graph.add_node("Abs", node.inputs, node.outputs, name=node.name)
        return PassResult(rewrites=1)


class AsPassSource:
    """A stand-in for a rule set: anything with as_pass() joins a pipeline."""

    def as_pass(self) -> Pass:
        return DropNeg()


def test_names_instances_and_pass_sources_mix_in_one_pipeline():
    result = PassManager(["eliminate_identity", DropNeg(), "clean", AsPassSource()],
                         check=True).run(relu_chain())
    names = [s.pass_name for s in result.snapshots]
    assert names[0] == "eliminate_identity" and names[1] == "test_neg_to_abs"
    assert names[-1] == "test_neg_to_abs" and len(names) == 2 + 6 + 1
    assert ops(result.final) == {"Relu": 2, "Abs": 1}
    assert result.snapshots[1].changed and not result.snapshots[-1].changed


def test_something_else_in_a_pipeline_is_refused():
    with pytest.raises(Exception, match="cannot run 42 as a pass"):
        PassManager(["dce", 42])


class Log(Instrument):
    def __init__(self, tag: str, log: list):
        self.tag, self.log = tag, log

    def before_pipeline(self, graph, passes):
        self.log.append((self.tag, "pipeline", tuple(p.name for p in passes)))

    def before_pass(self, step):
        self.log.append((self.tag, "before", step.name, step.snapshot is None))

    def after_pass(self, step):
        self.log.append((self.tag, "after", step.name, step.snapshot.nodes_after,
                         step.seconds > 0))


def test_instruments_nest_around_each_pass_and_see_the_snapshot():
    log: list = []
    PassManager(["eliminate_identity", "dce"],
                instruments=[Log("A", log), Log("B", log)]).run(relu_chain())
    assert log == [
        ("A", "pipeline", ("eliminate_identity", "dce")),
        ("B", "pipeline", ("eliminate_identity", "dce")),
        ("A", "before", "eliminate_identity", True), ("B", "before", "eliminate_identity", True),
        ("B", "after", "eliminate_identity", 3, True),
        ("A", "after", "eliminate_identity", 3, True),
        ("A", "before", "dce", True), ("B", "before", "dce", True),
        ("B", "after", "dce", 3, True), ("A", "after", "dce", 3, True)]


def test_progress_and_verification_still_come_from_the_flags():
    seen = []
    result = PassManager("clean", verify=True).run(
        load_sample("cnn_bn"), on_progress=lambda i, n, name: seen.append((i, n, name)))
    assert seen == [(i, 6, s.pass_name) for i, s in enumerate(result.snapshots)]
    assert all(s.verify is not None and s.verify.ok for s in result.snapshots)
    assert result.verifier is not None


# ---- a pass that raises -----------------------------------------------------------------------

class ReplaceTooMuch(Pass):
    """Test pass: replaces a Relu pair whose inner result is also read outside (a bug)."""

    name = "test_replace_too_much"
    family = "test"

    def run(self, graph, ctx):
        first, second = graph.nodes_of_type("Relu")
        replace_by_op(graph, ctx, [first, second], "Relu", "broken_rule", [first.inputs[0]])
        return PassResult(rewrites=1)


class Crashes(Pass):
    """Test pass: fails before touching any node."""

    name = "test_crashes"
    family = "test"

    def run(self, graph, ctx):
        return {}["missing"]


def test_a_pass_that_raises_is_named_with_the_node_a_rewrite_primitive_was_at():
    with pytest.raises(PassFailedError) as caught:
        PassManager([ReplaceTooMuch()]).run(relu_chain())
    err = caught.value
    assert str(err).startswith("pass test_replace_too_much failed at node '/block/Relu_1' "
                               "(Relu): ValueError: 2 results of the replaced nodes")
    assert err.where == "/block/Relu_1" and "leave test_replace_too_much out" in err.hint
    assert isinstance(err.__cause__, ValueError)


def test_a_node_the_pass_did_not_name_is_said_to_be_unknown():
    with pytest.raises(PassFailedError, match=r"^pass test_crashes failed at a node it did not "
                                              r"name: KeyError: 'missing'"):
        PassManager(["dce", Crashes()]).run(relu_chain())


def test_working_on_marks_the_node_only_while_the_block_runs():
    graph = relu_chain()
    ctx = PassContext()
    relu = graph.node_by_name("/block/Relu")
    with ctx.working_on(relu):
        assert ctx.current_node is relu
    assert ctx.current_node is None
    with pytest.raises(RuntimeError), ctx.working_on(relu):
        raise RuntimeError
    assert ctx.current_node is relu   # kept for the report


# ---- requires / ensures -----------------------------------------------------------------------

class LeavesDeadCode(Pass):
    """Test pass: adds a node nobody reads, yet claims no dead nodes remain."""

    name = "test_leaves_dead_code"
    family = "test"
    ensures = ("no_dead_nodes",)

    def run(self, graph, ctx):
        graph.add_node("Neg", [graph.inputs[0]], 1, name="orphan")
        return PassResult(rewrites=1)


class NeedsBoundDims(Pass):
    """Test pass: requires the user's bindings to be applied already."""

    name = "test_needs_bound_dims"
    family = "test"
    requires = ("dims_bound",)

    def run(self, graph, ctx):
        return PassResult()


def test_check_mode_asserts_what_a_pass_ensures():
    PassManager([LeavesDeadCode()]).run(relu_chain())          # unchecked: runs
    with pytest.raises(PropertyViolationError,
                       match="pass test_leaves_dead_code ensures 'no_dead_nodes', which does "
                             "not hold after it: orphan"):
        PassManager([LeavesDeadCode()], check=True).run(relu_chain())


def test_check_mode_asserts_what_a_pass_requires():
    bind = {"n": 2}
    with pytest.raises(PropertyViolationError, match="requires 'dims_bound'.*before it: x"):
        PassManager([NeedsBoundDims()], bindings=bind, check=True).run(relu_chain())
    result = PassManager(["specialize_dims", NeedsBoundDims()], bindings=bind,
                         check=True).run(relu_chain())
    assert result.final.inputs[0].shape == (2, 4)


def test_the_builtin_declarations_hold_on_a_real_model():
    graph = load_sample("bert_tiny_op13")
    bindings = {"batch": 1, "seq": 8}
    assert violations("dims_bound", graph, PassContext(bindings=bindings))
    result = PassManager("O1", bindings=bindings, check=True).run(graph)
    ctx = PassContext(bindings=bindings)
    for prop in ("dims_bound", "no_dead_nodes", "no_removable_identity"):
        assert violations(prop, result.final, ctx) == [], prop
    assert get_pass("dce").ensures == ("no_dead_nodes",)


def test_a_property_violation_names_the_offenders():
    graph = relu_chain()
    assert violations("no_removable_identity", graph, PassContext()) == ["alias"]
    graph.add_node("Neg", [graph.inputs[0]], 1, name="orphan")
    assert violations("no_dead_nodes", graph, PassContext()) == ["orphan"]


def test_registering_a_pass_with_an_unknown_property_is_refused():
    class Vague(Pass):
        """Test pass."""

        name = "test_vague"
        ensures = ("fast",)

        def run(self, graph, ctx):
            return PassResult()

    with pytest.raises(ValueError, match=r"unknown properties \['fast'\]"):
        register_pass(Vague)


def test_instances_and_pass_sources_register_under_their_name():
    register_pass(AsPassSource())
    assert isinstance(get_pass("test_neg_to_abs"), DropNeg)
    assert ops(PassManager("test_neg_to_abs").run(relu_chain()).final)["Abs"] == 1


# ---- --print-ir-after -------------------------------------------------------------------------

def test_print_ir_after_a_pass_prints_its_graph_before_the_report(capsys):
    assert main(["compile", "cnn_bn", "-p", "clean", "--print-ir-after", "eliminate_identity"]) \
        == 0
    out = capsys.readouterr().out
    expected = PassManager("clean").run(load_sample("cnn_bn")).snapshots[1].graph
    header = "// ----- IR after pass 2 of 6: eliminate_identity (changed) -----\n"
    assert out.startswith(header + format_graph(expected) + "\n")
    assert out.count("// ----- IR after") == 1
    assert out.index("eliminate_identity       19 -> 17") > len(header)


def test_print_ir_after_changed_prints_only_passes_that_changed(capsys):
    assert main(["compile", "cnn_bn", "-p", "O2", "--print-ir-after", "changed"]) == 0
    out = capsys.readouterr().out
    snapshots = PassManager("O2").run(load_sample("cnn_bn")).snapshots
    changed = [s for s in snapshots if s.changed]
    headers = [line for line in out.splitlines() if line.startswith("// ----- IR after")]
    assert headers == [f"// ----- IR after pass {s.index + 1} of {len(snapshots)}: "
                       f"{s.pass_name} (changed) -----" for s in changed]
    assert 0 < len(changed) < len(snapshots)


def test_print_ir_after_with_json_keeps_stdout_parseable(capsys):
    assert main(["compile", "cnn_bn", "-p", "clean", "--print-ir-after", "all", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["nodes_after"] == 17
    assert captured.err.count("// ----- IR after") == 6


def test_print_ir_after_a_pass_not_in_the_pipeline_is_a_usage_error(capsys):
    assert main(["compile", "cnn_bn", "-p", "clean", "--print-ir-after", "fuse_attention"]) == 2
    err = capsys.readouterr().err
    assert "pass 'fuse_attention' is not in the pipeline" in err and len(err.splitlines()) == 1


# ---- plugins ----------------------------------------------------------------------------------

PLUGIN = textwrap.dedent('''
    from compiler_core.passes import Pass, PassResult, register_pass


    @register_pass
    class {cls}(Pass):
        """Replace every Relu by a Sigmoid (a visible change for the test)."""

        name = "{name}"
        family = "plugin"

        def run(self, graph, ctx):
            count = 0
            for node in graph.nodes_of_type("Relu"):
                graph.remove_node(node)
                graph.add_node("Sigmoid", node.inputs, node.outputs, name=node.name)
                count += 1
            with ctx.working_on(graph.nodes[0]):
                {failure}
            return PassResult(rewrites=count)
''')


def plugin_file(tmp_path, name: str, failure: str = "pass") -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(PLUGIN.format(cls=name.title().replace("_", ""), name=name,
                                  failure=failure))
    return str(path)


def test_a_plugin_file_adds_a_pass_to_compile_and_passes(tmp_path, capsys):
    path = plugin_file(tmp_path, "plugin_relu_to_sigmoid")
    out = tmp_path / "out.onnx"
    assert main(["compile", "cnn_bn", "--plugins", path, "-p", "dce,plugin_relu_to_sigmoid",
                 "-o", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["op_histogram_after"]["Sigmoid"] == 3 and "Relu" not in \
        report["op_histogram_after"]
    assert path in plugins.loaded_sources()
    assert main(["passes", "--plugins", path, "--json"]) == 0   # loading twice is harmless
    listed = json.loads(capsys.readouterr().out)["passes"]
    assert {"name": "plugin_relu_to_sigmoid", "family": "plugin",
            "description": "Replace every Relu by a Sigmoid (a visible change for the test)."} \
        in listed


def test_a_plugin_pass_that_raises_is_one_line_with_exit_2(tmp_path, capsys):
    path = plugin_file(tmp_path, "plugin_raises", failure="raise RuntimeError('boom')")
    assert main(["compile", "cnn_bn", "--plugins", path, "-p",
                 "eliminate_identity,plugin_raises"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "graphlab: error: pass plugin_raises failed at node '/block1/block1.0/Conv' (Conv): "
        "RuntimeError: boom (a bug in the pass: please report it with the model, or leave "
        "plugin_raises out of the pipeline)"]


@pytest.mark.parametrize("source, line, kind", [
    ("import os\n\nraise ImportError('no such helper')\n", 3, "ImportError: no such helper"),
    ("x = 1\ndef broken(:\n", 2, "SyntaxError"),
])
def test_a_plugin_that_fails_to_load_names_file_and_line(tmp_path, capsys, source, line, kind):
    path = tmp_path / "bad_plugin.py"
    path.write_text(source)
    assert main(["passes", "--plugins", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"graphlab: error: plugin {path} failed to load at line {line}: "
                          f"{kind}")
    assert len(err.splitlines()) == 1


def test_a_missing_plugin_file_is_a_usage_error(tmp_path):
    with pytest.raises(PluginError, match="plugin file .*nowhere.py' not found"):
        plugins.load_plugins([str(tmp_path / "nowhere.py")], entry_points_too=False)


def test_entry_points_in_the_graphlab_plugins_group_are_discovered(tmp_path, monkeypatch):
    (tmp_path / "ep_plugin_module.py").write_text(
        PLUGIN.format(cls="EpPass", name="plugin_from_entry_point", failure="pass"))
    dist = tmp_path / "ep_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[graphlab.plugins]\nsigmoids = ep_plugin_module\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "entry-point:sigmoids" in plugins.load_plugins()
    assert get_pass("plugin_from_entry_point").family == "plugin"
    assert "entry-point:sigmoids" in plugins.loaded_sources()


def describe_pass(name: str, on_progress=None) -> str:
    """A builder's job: knows the pass only if the builder loaded the server's plugins."""
    return get_pass(name).description()


def test_app_builders_load_the_plugins_the_server_loaded(tmp_path):
    path = plugin_file(tmp_path, "plugin_in_builder")
    plugins.load_plugins([path], entry_points_too=False)
    board = Builds(SharedStorage(str(tmp_path / "cache")), ttl_seconds=600,
                   launcher=LocalLauncher())
    job = BuildJob("plugin-job", "plugin", functools.partial(describe_pass, "plugin_in_builder"))
    found = board.get_or_start(job, grace=60)
    assert found == "Replace every Relu by a Sigmoid (a visible change for the test)."


def test_explain_shows_the_pattern_of_a_plugin_rule(tmp_path, capsys):
    path = tmp_path / "relu_rule_plugin.py"
    path.write_text(textwrap.dedent('''
        from compiler_core.passes import register_pass
        from compiler_core.passes.framework.rules import Rule, RuleSet
        from compiler_core.patterns import any_value, op


        class DoubleReluRule(Rule):
            """Relu of a Relu -> one Relu (the second one does nothing)."""

            name = "plugin_double_relu"

            def pattern(self):
                """Two Relus in a row."""
                return op("Relu", op("Relu", any_value().bind("x")))

            def rewrite(self, graph, ctx, match):
                return self.replace(graph, ctx, match.nodes, "Relu", [match["x"]])


        register_pass(RuleSet("plugin_drop_double_relu", "cleanup", (DoubleReluRule(),),
                              doc="Replace a Relu of a Relu by one Relu."))
    '''))
    assert main(["explain", "cnn_bn", "--plugins", str(path), "--pattern",
                 "plugin_double_relu", "--json"]) == 0
    (report,) = json.loads(capsys.readouterr().out)["patterns"]
    assert report["name"] == "plugin_double_relu" and report["matches"] == []


# ---- copy-on-write snapshots ----------------------------------------------------------------

class SetAxisInPlace(Pass):
    """Test pass: changes an attribute behind the Graph's back (a container changed in place)."""

    name = "test_attr_in_place"
    family = "test"

    def run(self, graph, ctx):
        graph.nodes_of_type("Relu")[0].attrs["note"] = 1
        return PassResult(rewrites=1)


class ShapeByField(Pass):
    """Test pass: changes a value's shape by setting the field (seen by the guard)."""

    name = "test_shape_field"
    family = "test"

    def run(self, graph, ctx):
        graph.nodes_of_type("Relu")[0].outputs[0].shape = ("m", 4)
        return PassResult(rewrites=1)


class OpByField(Pass):
    """Test pass: sets a Relu's op by hand, before (seen by the guard) or after (seen by no one)
    a change through the Graph."""

    name = "test_op_by_field"
    family = "test"

    def __init__(self, by_hand_first: bool):
        self.by_hand_first = by_hand_first

    def run(self, graph, ctx):
        relu = graph.nodes_of_type("Relu")[0]
        if self.by_hand_first:
            relu.op_type = "Sigmoid"
        graph.set_node_attr(graph.nodes_of_type("Identity")[0], "note", 1)
        if not self.by_hand_first:
            relu.op_type = "Sigmoid"
        return PassResult(rewrites=1)


def test_passes_that_change_nothing_share_the_graph_and_earlier_snapshots_stay_intact():
    result = PassManager(["eliminate_dropout", "dce", DropNeg(), "dce"], check=True).run(
        relu_chain())
    first, second, negated, last = result.snapshots
    assert first.graph is second.graph and negated.graph is last.graph
    assert second.graph is not negated.graph and not first.changed and not last.changed
    assert ops(second.graph) == {"Identity": 1, "Relu": 2, "Neg": 1}   # as before DropNeg
    assert ops(negated.graph) == {"Identity": 1, "Relu": 2, "Abs": 1}
    assert negated.diff.added and negated.diff.removed
    assert ops(result.initial) == {"Identity": 1, "Relu": 2, "Neg": 1}


def test_a_field_set_on_a_value_copies_the_graph_first():
    result = PassManager(["dce", ShapeByField()], check=True).run(relu_chain())
    before, after = (s.graph for s in result.snapshots)
    relu = lambda g: g.nodes_of_type("Relu")[0].outputs[0].shape  # noqa: E731
    assert relu(before) == ("n", 4) and relu(after) == ("m", 4) and before is not after


def test_a_pass_s_diff_lists_a_node_its_first_change_set_by_hand():
    (snapshot,) = PassManager([OpByField(by_hand_first=True)], check=True).run(
        relu_chain()).snapshots
    modified = [snapshot.graph.node_by_id(i).name for i in snapshot.diff.modified]
    assert modified == ["alias", "/block/Relu"]


def test_check_mode_names_a_pass_that_sets_a_node_s_field_after_its_first_change():
    with pytest.raises(Exception, match="test_op_by_field changed a node behind"):
        PassManager([OpByField(by_hand_first=False)], check=True).run(relu_chain())


def test_check_mode_names_a_pass_that_changes_a_container_in_place():
    with pytest.raises(Exception, match="test_attr_in_place changed the graph behind"):
        PassManager(["dce", SetAxisInPlace()], check=True).run(relu_chain())
