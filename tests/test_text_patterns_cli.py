"""`graphlab explain MODEL --patterns FILE` reports a text file's patterns exactly as it reports
the library's, and a plugin's rule can take its pattern from a text file."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from compiler_core.patterns.text import example_text
from graphlab.cli import main


def write_example(tmp_path, example: str):
    path = tmp_path / "mine.pat"
    path.write_text(example_text(example), encoding="utf-8")
    return str(path)


def run_json(capsys, argv: list[str]) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_a_files_patterns_are_reported_like_the_librarys(tmp_path, capsys):
    path = write_example(tmp_path, "A near miss: Conv + BatchNorm")
    ours = run_json(capsys, ["explain", "teach_conv_bn", "--patterns", path, "--json"])
    theirs = run_json(capsys, ["explain", "teach_conv_bn", "--pattern", "conv_bn", "--json"])
    [mine], [library] = ours["patterns"], theirs["patterns"]
    assert mine["name"] == library["name"] == "conv_bn"
    assert [m["nodes"] for m in mine["matches"]] == [m["nodes"] for m in library["matches"]]
    assert mine["near_misses"] == library["near_misses"]
    assert mine["near_misses"][0]["blocking_node"] == "relu_side"
    assert mine["reasons"] == {"Conv output has another consumer (Relu 'relu_side')": 1}
    assert mine["description"].startswith("A Conv whose output only a BatchNormalization")

    assert main(["explain", "teach_conv_bn", "--patterns", path]) == 0
    text = capsys.readouterr().out
    assert "conv_bn: 1 match, 1 near miss" in text
    assert "✗ 1 site: Conv output has another consumer (Relu 'relu_side')" in text
    assert "found    2 consumers, Relu 'relu_side' outside the match" in text


def test_one_node_explained_shows_every_or_branch(tmp_path, capsys):
    path = write_example(tmp_path, "LayerNorm")
    assert main(["explain", "teach_layernorm", "--patterns", path, "--pattern", "gelu",
                 "--node", "ln_wrongaxis_mean"]) == 0
    text = capsys.readouterr().out
    assert "✗ 1 site: ReduceMean: expected axes = [-1], found axes = [1]" in text
    assert "or: ReduceMean input 1: expected constant -1, found no input" in text
    assert "gelu: 0 matches, 1 near miss" in text   # library and file patterns together


def test_a_broken_file_is_one_line_with_its_line_and_column(tmp_path, capsys):
    path = tmp_path / "broken.pat"
    path.write_text("def f(x):\n    return Relu(x) + foo\n")
    assert main(["explain", "teach_gelu", "--patterns", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"graphlab: error: {path}, line 2, column 22: unknown name 'foo' (expected a name "
        "defined above, a parameter, a constructor (op, const, any_value, ...), or an op type "
        "starting with a capital letter)"]
    assert main(["explain", "teach_gelu", "--patterns", str(tmp_path / "none.pat")]) == 2
    assert "not found" in capsys.readouterr().err


SILU_PATTERNS = '''
def silu(x):
    """x times sigmoid(x): SiLU (Swish), written out."""
    return x * Sigmoid(x)
'''

SILU_PLUGIN = textwrap.dedent('''
    from pathlib import Path

    from compiler_core.passes import register_pass
    from compiler_core.passes.framework.rules import Rule, RuleSet
    from compiler_core.patterns.text import load_patterns

    PATTERNS = load_patterns(Path(__file__).with_name("silu.pat"))


    class SiluRule(Rule):
        """x * Sigmoid(x) -> one fused SiLU node (its body: the two ops)."""

        name = "silu_text"

        def pattern(self):
            return PATTERNS.pattern("silu")

        def rewrite(self, graph, ctx, match):
            return self.fuse(graph, ctx, match.nodes, "SiLU", operands=[match["x"]])


    register_pass(RuleSet("fuse_silu_text", "fusion", (SiluRule(),),
                          doc="Fuse SiLU written out, found by a text pattern."))
''')


def silu_model(path) -> None:
    """x -> MatMul -> SiLU -> MatMul, and a second SiLU whose Sigmoid is also an output."""
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
             helper.make_node("Sigmoid", ["h"], ["s"], name="sig"),
             helper.make_node("Mul", ["h", "s"], ["a"], name="silu_mul"),
             helper.make_node("MatMul", ["a", "w2"], ["y"], name="mm2"),
             helper.make_node("Sigmoid", ["y"], ["gate"], name="sig_out"),
             helper.make_node("Mul", ["gate", "y"], ["z"], name="silu_out")]
    weights = [numpy_helper.from_array(rng.standard_normal((4, 4)).astype(np.float32), n)
               for n in ("w1", "w2")]
    graph = helper.make_graph(
        nodes, "silu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 4]) for n in ("z", "gate")],
        weights)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                ir_version=10), str(path))


def test_a_plugin_rule_takes_its_pattern_from_a_text_file(tmp_path, capsys):
    (tmp_path / "silu.pat").write_text(SILU_PATTERNS)
    plugin = tmp_path / "silu_rules.py"
    plugin.write_text(SILU_PLUGIN)
    model = tmp_path / "silu.onnx"
    silu_model(model)
    report = run_json(capsys, ["compile", str(model), "--plugins", str(plugin), "-p",
                               "fuse_silu_text", "--verify", "--json"])
    # the second SiLU stays: its Sigmoid's output is also a graph output
    assert report["op_histogram_after"] == {"MatMul": 2, "graphlab.SiLU": 1, "Sigmoid": 1,
                                            "Mul": 1}
    assert report["verify"]["ok"] and report["runtime_check"]["ok"]
    assert report["runtime_check"]["level"] == "ORT_ENABLE_ALL"
