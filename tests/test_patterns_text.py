"""Patterns written as text: they find what the library's patterns find, every construct of
the format means what docs/patterns.md says, and hostile or broken text is refused cleanly
with its line and column — never executed."""

from __future__ import annotations

import functools
import time

import numpy as np
import pytest
from onnx import TensorProto, helper

from compiler_core.ir import load_model
from compiler_core.passes.framework.rulebook import pattern_named
from compiler_core.patterns import MatchBudget, MatchTimeout, explain, explain_at, match_all
from compiler_core.patterns.testing import build_graph
from compiler_core.records import to_json
from compiler_core.patterns.text import (EXAMPLES, PatternTextError, example_text,
                                         load_patterns, parse_patterns)
from graphlab.samples import resolve_model

node = helper.make_node
f32 = np.float32

# Each example and the passes' pattern it writes out.
PASS_TWIN = {"GELU": "gelu", "LayerNorm": "layernorm", "RMSNorm": "rmsnorm",
                "A near miss: Conv + BatchNorm": "conv_bn"}
SAMPLES = ("teach_gelu", "teach_layernorm", "teach_conv_bn", "bert_tiny_op13", "gpt2_tiny",
           "llama_tiny_torchscript", "llama_tiny_dynamo")


@functools.cache
def sample(name: str):
    return load_model(resolve_model(name))


def only(text: str):
    """The one pattern of ``text``."""
    patterns = parse_patterns(text).patterns
    assert len(patterns) == 1
    return patterns[0]


def report(graph, text: str):
    return explain(graph, [only(text)])[0]


def node_sets(report_) -> list[list[str]]:
    return sorted(sorted(n.name for n in m.nodes) for m in report_.matches)


# ------------------------------------------------------------- the examples = the library
@pytest.mark.parametrize("model", SAMPLES)
@pytest.mark.parametrize("example", list(EXAMPLES))
def test_each_example_finds_what_its_library_twin_finds(model, example):
    graph = sample(model)
    ours = explain(graph, parse_patterns(example_text(example)).patterns)[0]
    theirs = explain(graph, [pattern_named(PASS_TWIN[example])])[0]
    assert node_sets(ours) == node_sets(theirs)
    ours_sites = {m.site.name for m in ours.near_misses}
    theirs_sites = {m.site.name for m in theirs.near_misses}
    if example == "RMSNorm":   # the library also knows half precision: casts around the norm
        assert ours_sites <= theirs_sites
    else:
        assert ours_sites == theirs_sites


def test_examples_match_the_teaching_samples_and_say_why_not_elsewhere():
    gelu = explain(sample("teach_gelu"), parse_patterns(example_text("GELU")).patterns)[0]
    assert [m.root.name for m in gelu.matches] == ["gelu_good_half_mul"]
    [miss] = gelu.near_misses
    assert miss.site.name == "gelu_wrongconst_half_mul"
    passes = explain(sample("teach_gelu"), [pattern_named("gelu")])[0]
    assert miss.reason == passes.near_misses[0].reason \
        == "Div input 1: expected constant ≈ 1.41421 (±0.0001), found constant 1.5"

    layernorm = explain(sample("teach_layernorm"),
                        parse_patterns(example_text("LayerNorm")).patterns)[0]
    assert [m.root.name for m in layernorm.matches] == ["ln_good_shift"]
    [miss] = layernorm.near_misses
    assert (miss.site.name, miss.reason) == (
        "ln_wrongaxis_shift", "ReduceMean: expected axes = [-1], found axes = [1]")
    assert miss.failure.failed_node.name == "ln_wrongaxis_mean"

    conv_bn = explain(sample("teach_conv_bn"),
                      parse_patterns(example_text("A near miss: Conv + BatchNorm")).patterns)[0]
    [miss] = conv_bn.near_misses
    assert miss.reason == "Conv output has another consumer (Relu 'relu_side')"
    assert miss.failure.blocking_node.name == "relu_side"


@pytest.mark.parametrize("model, ops", [
    ("llama_tiny_torchscript", ["Add", "Div", "Mul", "Pow", "ReduceMean", "Sqrt"]),
    ("llama_tiny_dynamo", ["Add", "Mul", "Mul", "Pow", "Reciprocal", "ReduceMean", "Sqrt"])])
def test_rmsnorm_text_finds_every_rmsnorm_of_a_llama_decoder(model, ops):
    """Two layers, two norms each, plus the final norm.  The dynamo export writes ReduceMean's
    axes as an input (opset 18+), a Reciprocal, and multiplies by the weight right away; the
    TorchScript one has the axes as an attribute, 1 / sqrt as a Div, and a Cast back to the
    input's type before the weight, so its matches end at the normalization (the unweighted
    alternative)."""
    found = explain(sample(model), parse_patterns(example_text("RMSNorm")).patterns)[0]
    assert len(found.matches) == 5
    for match in found.matches:
        assert sorted(n.op_type for n in match.nodes) == ops
        weight = match.bindings["weight"]
        weighted = weight is not None and weight.constant_value().shape == (64,)
        assert weighted == (ops.count("Mul") == 2)
    assert found.reasons == {"Mul input 1: expected Reciprocal, found Sigmoid": 2}  # SwiGLU


def test_a_text_reads_as_a_file_and_each_pattern_has_its_docstring(tmp_path):
    path = tmp_path / "mine.pat"
    path.write_text(example_text("LayerNorm"), encoding="utf-8")
    found = load_patterns(path)
    assert found.names == ["layernorm"]   # the helper _mean is not a pattern of its own
    assert found.description.startswith("Layer normalization written out")
    assert found.pattern("layernorm").describe().startswith("Layer normalization over the last")
    with pytest.raises(KeyError, match="there: layernorm"):
        found.pattern("gelu")


# ----------------------------------------------------------------------- the format
def chain():
    """y = Relu(x) * Sigmoid(x) + c  (c = 1.5), with the Relu also read by z."""
    return build_graph(
        [node("Relu", ["x"], ["r"], name="relu"), node("Sigmoid", ["x"], ["s"], name="sig"),
         node("Mul", ["s", "r"], ["m"], name="mul"), node("Add", ["m", "c"], ["y"], name="add"),
         node("Neg", ["r"], ["z"], name="neg")],
        {"x": (2, 4)}, {"y": (2, 4), "z": (2, 4)}, {"c": np.array(1.5, f32)})


def test_operator_sugar_reads_like_the_formula_and_binds_the_names_it_assigns():
    pattern = only("""
def gated(x):
    '''Relu(x) times Sigmoid(x), plus a constant.'''
    gate = Sigmoid(x)
    return Relu(x).allow_external_uses() * gate + 1.5
""")
    [match] = match_all(chain(), pattern)
    assert match.root.name == "add"
    assert match["x"].name == "x" and match["gate"].name == "sig"
    assert pattern.describe() == "Relu(x) times Sigmoid(x), plus a constant."


def test_intermediates_are_used_only_inside_the_match_unless_allowed():
    miss = report(chain(), "def gated(x):\n    return Relu(x) * Sigmoid(x) + 1.5\n")
    assert not miss.matches
    assert miss.near_misses[0].reason == "Relu output has another consumer (Neg 'neg')"
    assert miss.near_misses[0].failure.blocking_node.name == "neg"


def test_commutative_operands_match_either_order_unless_said_otherwise():
    graph = chain()   # the graph's Mul reads Sigmoid first
    assert match_all(graph, only("def f(x):\n    return Relu(x).allow_external_uses() * "
                                 "Sigmoid(x)\n"))
    ordered = only("def f(x):\n    return op('Mul', Relu(x).allow_external_uses(), "
                   "Sigmoid(x), commutative=False)\n")
    assert explain_at(graph, ordered, "mul").reason == "Mul input 0: expected Relu, found Sigmoid"


def test_constants_match_within_their_tolerance():
    graph = sample("teach_gelu")   # one GELU divides by √2, the other by 1.5
    exact = "def f(x):\n    return Erf(x / sqrt(2))\n"
    loose = "def f(x):\n    return Erf(x / const(1.45, tol=0.1))\n"
    assert [m.root.name for m in match_all(graph, only(exact))] == ["gelu_good_erf"]
    assert len(match_all(graph, only(loose))) == 2


def test_attribute_dtype_rank_and_shape_constraints():
    graph = sample("teach_layernorm")
    axis_one = "def f(x):\n    return ReduceMean(x, axes=[1])\n"
    assert [m.root.name for m in match_all(graph, only(axis_one))] == [
        "ln_wrongaxis_mean", "ln_wrongaxis_var"]
    either = "def f(x):\n    return ReduceMean(x, axes=one_of([1], [-1]))\n"
    assert len(match_all(graph, only(either))) == 4
    typed = only("def f(x):\n    return Sqrt(x.has_dtype('float16'))\n")
    assert not match_all(graph, typed)
    assert explain_at(graph, typed, "ln_good_sqrt").reason == \
        "Sqrt input 0: expected dtype float16, found dtype float32"
    shaped = "def f(x):\n    return Sqrt(x.has_shape([2, 4, 1]).has_rank(3))\n"
    assert len(match_all(graph, only(shaped))) == 1   # the other variance is [2, 1, 16]


def test_a_name_is_one_node_and_a_definition_called_twice_is_two():
    graph = build_graph(
        [node("Relu", ["x"], ["a"], name="relu_a"), node("Relu", ["x"], ["b"], name="relu_b"),
         node("Add", ["a", "b"], ["y"], name="add")], {"x": (2,)}, {"y": (2,)})
    same = report(graph, "def f(x):\n    r = Relu(x)\n    return r + r\n")
    assert not same.matches
    assert "the same Relu as before" in same.near_misses[0].reason
    twice = "def _r(x):\n    return Relu(x)\n\ndef f(x):\n    return _r(x) + _r(x)\n"
    assert len(match_all(graph, only(twice))) == 1


def test_named_sub_patterns_at_the_top_are_shared_by_every_definition():
    patterns = parse_patterns("""
'''Two patterns sharing a named part.'''
half = const(0.5)

def scaled(x):
    return x * half

def halved(x):
    return Div(x, 2) | x * half
""").patterns
    graph = build_graph([node("Mul", ["x", "h"], ["y"], name="mul")], {"x": (2,)}, {"y": (2,)},
                        {"h": np.array(0.5, f32)})
    assert [p.title for p in patterns] == ["scaled", "halved"]
    assert all(len(match_all(graph, p)) == 1 for p in patterns)


def test_ops_of_other_domains_variadic_inputs_and_alternatives():
    model = helper.make_model(helper.make_graph(
        [node("Relu", ["x"], ["r"], name="relu"),
         node("Fancy", ["r", "x"], ["f"], name="fancy", domain="com.example"),
         node("Concat", ["f", "r", "x"], ["y"], name="concat", axis=0)],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6])]),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)],
        ir_version=10)
    graph = load_model(model.SerializeToString())
    dotted = "def f(x):\n    return com.example.Fancy(Relu(x).allow_external_uses(), x)\n"
    spelled = ("def f(x):\n    return op('Fancy', Relu(x).allow_external_uses(), x, "
               "domain='com.example')\n")
    assert len(match_all(graph, only(dotted))) == len(match_all(graph, only(spelled))) == 1
    with pytest.raises(PatternTextError, match="'Fancy' is not an ONNX op"):
        only("def f(x):\n    return Fancy(x, ...)\n")   # no domain: ONNX's own
    rest = "def f(x):\n    return Concat(any_value(), variadic(any_value(), 2).bind('rest'))\n"
    [match] = match_all(graph, only(rest))
    assert [v.name for v in match["rest"]] == ["r", "x"]
    either = "def f(x):\n    return any_of(Sigmoid(x), Relu(x)) | Tanh(x)\n"
    assert [m.root.name for m in match_all(graph, only(either))] == ["relu"]


# ----------------------------------------------------------------- refusals and errors
# Sixteen helpers, each nesting 55 ops around the one before: within every single limit of
# the text, but 880 levels deep in all (the matcher recurses once per level).
STACKED_HELPERS = "def _h0(x):\n    return " + "Relu(" * 55 + "x" + ")" * 55 + "\n" + "".join(
    f"\ndef _h{k}(x):\n    return " + "Relu(" * 55 + f"_h{k - 1}(x)" + ")" * 55 + "\n"
    for k in range(1, 16)) + "\ndef deep(x):\n    return _h15(x)\n"
# Helpers that only make lists of numbers, each calling the one before ten times: no pattern
# element, no deep nesting, but 10**15 calls.
FANNED_HELPERS = "def _n0(x):\n    return 1\n" + "".join(
    f"\ndef _n{k}(x):\n    return [" + ", ".join([f"_n{k - 1}(x)"] * 10) + "]\n"
    for k in range(1, 16)) + "\ndef fan(x):\n    return Relu(x) * _n15(x)\n"
REFUSED = [   # (text, line, column, words of the problem)
    ("import os\n", 1, 1, "imports are not part"),
    ("from os import system\n", 1, 1, "imports are not part"),
    ("y = __import__('os')\n", 1, 5, "double underscores"),
    ("def f(x):\n    return Relu(x).__init__()\n", 2, 12, "double underscores"),
    ("def f(x):\n    return x.__class__\n", 2, 12, "attribute access"),
    ("def f(x):\n    return Relu(x.shape)\n", 2, 17, "attribute access"),
    ("def f(x):\n    return os.system('rm -rf /')\n", 2, 12, "unknown name 'os'"),
    ("def f(x):\n    return open('/etc/passwd')\n", 2, 12, "unknown name 'open'"),
    ("def f(x):\n    return Relu(x).where(1)\n", 2, 12, "has no method 'where'"),
    ("def f(x):\n    return Relu(lambda: 1)\n", 2, 17, "lambda"),
    ("ys = [Relu(v) for v in range(3)]\n", 1, 6, "comprehensions"),
    ("def f(x):\n    return Split(x)[1]\n", 2, 12, "indexing"),
    ("def f(x):\n    return op(f'{x}')\n", 2, 15, "f-strings"),
    ("class A:\n    pass\n", 1, 1, "classes"),
    ("while True:\n    pass\n", 1, 1, "'while' statements"),
    ("@foo\ndef f(x):\n    return Relu(x)\n", 1, 2, "decorators"),
    ("def f(x=1):\n    return Relu(x)\n", 1, 9, "only plain parameters"),
    ("def f(x):\n    return Relu(x, **{'a': 1})\n", 2, 22, "'**' unpacking"),
    ("def f(x):\n    Relu(x)\n    return Relu(x)\n", 2, 5, "does nothing"),
    ("def f(x):\n    return " + "Relu(" * 70 + "x" + ")" * 70 + "\n", 2, None, "nest more than"),
    ("def f(x):\n    return " + "(" * 300 + "x" + ")" * 300 + "\n", 2, None,
     "too many nested parentheses"),
    ("def f(x):\n    return " + "+".join(["x"] * 25_000) + "\n", 1, 1, "nests too deeply"),
    ("# " + "a" * 70_000 + "\n", 1, 1, "more than 64,000"),
    ("def f(x):\n    return f(x)\n", 2, 12, "call each other more than 16 deep"),
    ("y = 10 ** 10 ** 10\n\ndef f(x):\n    return Relu(x)\n", 1, 5, "too large"),
    ("def f(x):\n    return Relu(x) * ('a' * 1000000000)\n", 2, 23, "string 'a' cannot"),
    ("def f(x):\n    return Relu(x\n", 2, 16, "'(' was never closed"),
    ("def f(x):\n    return Erff(x)\n", 2, 12, "'Erff' is not an ONNX op"),
    ("def f(x):\n    return Relu(x).bind('a', 'b')\n", 2, 12, "too many positional"),
    ("def f(x):\n    return Relu(x.has_dtype('flaot32'))\n", 2, 17, "unknown dtype"),
    ("def f(x):\n    return x\n", 2, 5, "match every node"),
    ("def f(x):\n    return Relu(x) | 1\n", 2, 22, "on one side of '|'"),
    ("def f(x):\n    '''é'''\n    return Relu(x) + héllo\n", 3, 22, "unknown name 'héllo'"),
    ("y = 1\n", 1, 1, "defines no pattern"),
    (STACKED_HELPERS, None, None, "nests more than 100 levels deep"),
    (FANNED_HELPERS, None, None, "more than 50,000 steps"),
    ("def chain(x):\n    a0 = Relu(x)\n" + "".join(f"    a{i} = Relu(a{i - 1})\n"
                                                  for i in range(1, 150)) + "    return a149\n",
     1, 1, "'chain' nests more than 100 levels deep"),
]


@pytest.mark.parametrize("text, line, column, words", REFUSED)
def test_text_outside_the_language_is_refused_with_line_column_and_what_was_expected(
        text, line, column, words):
    with pytest.raises(PatternTextError) as caught:
        parse_patterns(text, "mine.pat")
    err = caught.value
    assert words in err.problem
    assert err.line == (line or err.line) and err.column == (column or err.column)
    assert err.expected and err.hint.startswith("expected ")
    assert str(err).startswith(f"mine.pat, line {err.line}, column {err.column}: ")
    assert to_json(err.record())["where"] == f"mine.pat:{err.line}:{err.column}"


def test_the_error_shows_the_line_with_a_caret_under_the_column():
    with pytest.raises(PatternTextError) as caught:
        parse_patterns("def f(x):\n    return Relu(x) + foo\n")
    assert caught.value.excerpt() == "    return Relu(x) + foo\n                     ^"
    assert "'foo'" in caught.value.problem


def test_helpers_that_multiply_are_refused_before_they_grow():
    text = "def _b0(x):\n    return Relu(x) | Sigmoid(x)\n" + "".join(
        f"\ndef _b{k}(x):\n    return _b{k - 1}(x) | _b{k - 1}(x)\n" for k in range(1, 14)
    ) + "\ndef wide(x):\n    return _b13(x)\n"
    with pytest.raises(PatternTextError, match="grows past 2,000 elements"):
        parse_patterns(text)


def test_reading_a_text_runs_nothing(tmp_path, monkeypatch):
    """The reader never compiles the text: a Python-valid text that would act if executed
    is refused, and nothing it names is touched."""
    target = tmp_path / "touched"
    monkeypatch.chdir(tmp_path)
    for text in (f"def f(x):\n    return Relu(open({str(target)!r}, 'w'))\n",
                 "y = exec('open(\"touched\", \"w\")')\n"):
        with pytest.raises(PatternTextError):
            parse_patterns(text)
    assert not target.exists()


def test_files_that_cannot_be_read_say_so(tmp_path):
    with pytest.raises(Exception, match="not found"):
        load_patterns(tmp_path / "nowhere.pat")
    binary = tmp_path / "binary.pat"
    binary.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(Exception, match="UTF-8"):
        load_patterns(binary)
    big = tmp_path / "big.pat"
    big.write_text("#" * 300_000)
    with pytest.raises(Exception, match="too many for a pattern file"):
        load_patterns(big)


# ------------------------------------------------------------------------- time limit
def test_a_pattern_that_takes_too_long_is_stopped_cleanly():
    """Hundreds of alternatives tried at each of 3,000 sites: seconds without a limit.  The
    graph holds a Relu, as the pattern does: without one, no site could pass the early
    tests (each alternative wants a Relu's output), and none would be tried."""
    count = 3000
    graph = build_graph([node("Add", [f"v{i}", "x"], [f"v{i + 1}"], name=f"add{i}")
                         for i in range(count)] + [node("Relu", ["x"], ["r"], name="relu")],
                        {"v0": (2,), "x": (2,)}, {f"v{count}": (2,), "r": (2,)})
    text = "def _b0(x):\n    return Add(Add(x, x), Relu(x))\n" + "".join(
        f"\ndef _b{k}(x):\n    return _b{k - 1}(x) | _b{k - 1}(x)\n" for k in range(1, 9)
    ) + "\ndef wide(x):\n    return _b8(x)\n"
    pattern = only(text)
    start = time.perf_counter()
    with pytest.raises(MatchTimeout, match="stopped after 0.2 s: pattern 'wide'"):
        explain(graph, [pattern], budget=MatchBudget(0.2))
    assert time.perf_counter() - start < 1.0
    assert len(graph) == count + 1   # matching changed nothing


def test_a_budget_that_is_not_exhausted_changes_no_result():
    graph = sample("bert_tiny_op13")
    patterns = [pattern_named("layernorm"), pattern_named("gelu")]
    with_budget = explain(graph, patterns, budget=MatchBudget(60))
    without = explain(graph, patterns)
    assert to_json([r.record() for r in with_budget]) == to_json([r.record() for r in without])
    with pytest.raises(MatchTimeout):
        match_all(graph, pattern_named("layernorm"), budget=MatchBudget(0))
