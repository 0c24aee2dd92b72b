"""Input sizes a model runs at: read from its structure, found by trying, refused clearly.

The models (``sized_models``) fix or tie their sizes the ways exporters do; each fails at
the plain defaults, so a passing test means the sizes were found, and every check runs the
model in onnxruntime on the inputs made at them.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import sized_models
from attention_graphs import decoder_attention
from compiler_core.errors import RunFailedError
from compiler_core.hardware.representative_sizes import choose_sizes
from compiler_core.input_sizes import collect_facts, plan_sizes
from compiler_core.input_sizes.algebra import Poly, parse_dim
from compiler_core.input_sizes.trials import needs_isolation
from compiler_core.ir import load_model, to_bytes
from compiler_core.passes import PassManager
from compiler_core.records import to_json
from compiler_core.verify import Verifier, fit_inputs, make_inputs, run
from graphlab.cli import main
from graphlab.samples import resolve_model


def _graph(proto):
    return load_model(proto.SerializeToString())


def _fails_at_defaults(graph, shapes: dict[str, tuple]) -> None:
    """The model really does not run at the sizes generated without looking inside it."""
    inputs = {v.name: np.zeros(shapes[v.name], dtype=np.float32 if v.elem_type == 1
                               else np.int64) for v in graph.inputs}
    with pytest.raises(RunFailedError):
        run(graph, inputs)


# ---- the polynomials sizes are written in -------------------------------------------------

def test_a_reshape_equation_simplifies_to_the_fixed_size():
    seq, batch = Poly.symbol("seq"), Poly.symbol("batch")
    equation = seq * batch * 64 - Poly.const(5) * (batch * 4) * 16
    assert str(equation.without_common_factor()) == "seq - 5"
    a, b = equation.without_common_factor().linear_in("seq")
    assert (a.value, b.value) == (1, -5)


def test_polynomial_arithmetic_and_division():
    seq, batch = Poly.symbol("seq"), Poly.symbol("batch")
    assert (seq + batch) * (seq - batch) == seq * seq - batch * batch
    assert (seq * batch * 4).divided_by(batch * 2) == seq * 2
    assert (seq + 1).divided_by(batch) is None
    assert (seq * 3).divided_by(Poly.const(4)).evaluate({"seq": 8}) == Fraction(6)
    assert (seq * seq).linear_in("seq") is None


def test_dim_names_exporters_write_as_expressions_are_read():
    assert parse_dim("4*batch") == Poly.symbol("batch") * 4
    assert parse_dim("s0 + s1") == Poly.symbol("s0") + Poly.symbol("s1")
    assert parse_dim("batch_size") == Poly.symbol("batch_size")
    assert parse_dim("foo bar") == Poly.symbol("foo bar")


# ---- sizes read from the structure ---------------------------------------------------------

def test_a_reshape_target_with_a_constant_fixes_the_sequence_length():
    graph = _graph(sized_models.seq_first_heads())
    _fails_at_defaults(graph, {"x": (2, 2, 16)})
    plan = plan_sizes(graph)
    assert plan.sizes == {"seq": 5, "batch": 2}
    assert set(plan.found) == {"seq"}
    assert "fixed by node 'split_heads'" in plan.reasons["seq"]
    assert "[5, 4*batch, 4]" in plan.reasons["seq"]
    generated = fit_inputs(graph)
    assert generated.inputs["x"].shape == (5, 2, 16) and not generated.attempts
    assert generated.outputs["y"].shape == (5, 2, 16)


def test_an_expand_target_fixes_the_dim_it_broadcasts_against():
    graph = _graph(sized_models.expanded())
    _fails_at_defaults(graph, {"m": (2, 8)})
    plan = plan_sizes(graph)
    assert plan.sizes == {"batch": 2, "k": 6}
    assert "fixed by node 'expand'" in plan.reasons["k"]
    assert fit_inputs(graph).outputs["y"].shape == (2, 6)


def test_a_position_table_fixes_the_sequence_and_token_ids_stay_in_the_vocabulary():
    graph = _graph(sized_models.position_table())
    _fails_at_defaults(graph, {"ids": (2, 8), "mask": (2, 8)})
    inputs = fit_inputs(graph).inputs
    assert inputs["ids"].shape == inputs["mask"].shape == (2, 12)
    assert inputs["ids"].min() >= 0 and inputs["ids"].max() < 50
    assert set(np.unique(inputs["mask"])) == {0, 1}
    assert "fixed by node 'add_positions'" in plan_sizes(graph).reasons["seq"]


def test_dims_with_different_names_the_model_adds_together_get_one_size():
    graph = _graph(sized_models.tied_names())
    _fails_at_defaults(graph, {"a": (2, 4), "b": (8, 4)})
    plan = plan_sizes(graph)
    assert plan.sizes["rows"] == plan.sizes["n"]
    assert plan.reasons["n"].startswith("= rows, fixed by node 'add'")
    generated = fit_inputs(graph)
    assert generated.inputs["a"].shape == generated.inputs["b"].shape


def test_a_dim_nobody_named_is_found_under_the_name_the_importer_gives_it():
    graph = _graph(sized_models.unnamed_dim())
    _fails_at_defaults(graph, {"x": (2, 4)})
    plan = plan_sizes(graph)
    assert plan.sizes == {"x_dim0": 6}
    assert fit_inputs(graph).inputs["x"].shape == (6, 4)
    assert choose_sizes(graph).bindings == {"x_dim0": 6}   # what the app binds it to


def test_a_kv_cache_mask_covers_past_and_new_positions():
    graph = _graph(sized_models.kv_cache())
    _fails_at_defaults(graph, {"key": (2, 2, 8, 4), "past_key": (2, 2, 8, 4), "mask": (2, 8)})
    plan = plan_sizes(graph)
    assert plan.sizes["total"] == plan.sizes["past"] + plan.sizes["seq"] == 16
    assert plan.reasons["total"].startswith("= past + seq, fixed by node 'add_mask'")
    assert fit_inputs(graph).inputs["mask"].shape == (2, 16)


def test_the_kv_cache_relation_is_found_inside_the_fused_functions_of_a_written_model(
        tmp_path, capsys):
    """A decode step compiled and written: the mask is added to the scores inside the
    Attention function, and that is where total = past + 1 is; reading the model back must
    still see it (onnxruntime would otherwise be tried at sizes the mask does not fit)."""
    source = decoder_attention(past=True, seq=1, mask="padding", rotary=True)
    assert plan_sizes(source).sizes["total"] == plan_sizes(source).sizes["past"] + 1
    final = PassManager("O2").run(source).final
    written = tmp_path / "decode_o2.onnx"
    written.write_bytes(to_bytes(final))
    graph = load_model(written.read_bytes())
    assert not any(n.op_type == "Add" and n.domain == "" for n in graph.nodes)  # all inside
    plan = plan_sizes(graph)
    assert plan.sizes["total"] == plan.sizes["past"] + 1
    assert plan.reasons["total"].startswith("= past + 1, fixed by node 'masked_")
    assert main(["compile", str(written), "--verify"]) == 0
    report = capsys.readouterr().out
    assert f"total={plan.sizes['total']} (= past + 1" in report and "by trying" not in report


def test_an_index_into_a_flattened_padding_mask_bounds_its_length():
    graph = _graph(sized_models.padding_lookup())
    _fails_at_defaults(graph, {"mask": (2, 8), "past_key": (2, 2, 8, 4)})
    plan = plan_sizes(graph)
    assert plan.sizes["total"] == plan.sizes["past"] + 1
    assert "a bound holds at node 'lookup'" in plan.reasons["total"]
    assert fit_inputs(graph).outputs["y"].shape == (2, plan.sizes["total"])


def test_a_dim_named_as_an_expression_follows_its_symbols():
    graph = _graph(sized_models.expression_dim())
    plan = plan_sizes(graph, {"past": 5})
    assert plan.sizes == {"batch": 2, "past": 5}
    inputs = make_inputs(graph, plan=plan)
    assert inputs["mask"].shape == (2, 6) and inputs["past_key"].shape == (2, 2, 5, 4)
    assert "mask[1] = past + 1 = 6" in plan.describe()


def test_the_users_bindings_come_first():
    graph = _graph(sized_models.kv_cache())
    plan = plan_sizes(graph, {"past": 3, "seq": 1})
    assert plan.sizes == {"batch": 2, "seq": 1, "past": 3, "total": 4}
    assert "past" not in plan.reasons and plan.bindings == {"past": 3, "seq": 1}


def test_models_that_run_at_the_defaults_keep_them():
    for sample in ("bert_tiny_op13", "gpt2_tiny", "mobilenet_tiny"):
        graph = load_model(resolve_model(sample))
        facts = collect_facts(graph)
        plan = plan_sizes(graph)
        assert not plan.reasons and not plan.conflicts, sample
        assert plan.sizes == {"batch": 2, "seq": 8} if sample != "mobilenet_tiny" else \
            {"batch": 2, "height": 32, "width": 32}
        if sample == "bert_tiny_op13":   # its position table bounds the sequence
            assert any(b.limit == Poly.const(128) for b in facts.bounds)
            assert "needs seq <= 128" in plan_sizes(graph, {"seq": 200}).conflicts[0]


@pytest.mark.parametrize("sample", ["llama_tiny_torchscript", "llama_tiny_dynamo", "bart_tiny"])
def test_the_transformer_samples_run_at_the_sizes_found_with_ids_inside_the_vocabulary(sample):
    graph = load_model(resolve_model(sample))
    generated = fit_inputs(graph)
    assert not generated.attempts and not generated.plan.conflicts
    for name, ids in generated.inputs.items():
        if name.endswith("input_ids"):
            tables = [n.inputs[0] for n in graph.values[name].users() if n.op_type == "Gather"]
            rows = tables[0].shape[0]   # drawn from the whole table, never past it
            assert 0 <= ids.min() and rows // 2 < ids.max() < rows, name


def test_calibration_runs_the_model_at_the_sizes_it_fixes():
    from compiler_core.passes.framework.base import PassContext
    from compiler_core.passes.quantization.calibration import calibration_batches

    batches, source = calibration_batches(_graph(sized_models.seq_first_heads()), PassContext())
    assert [b["x"].shape for b in batches] == [(5, 2, 16)] * 4
    assert "generated random inputs at seq=5 (fixed by node 'split_heads'" in source


# ---- sizes found by trying -----------------------------------------------------------------

def test_sizes_the_structure_hides_are_found_by_trying_and_the_tries_are_reported():
    graph = _graph(sized_models.hidden_target())
    _fails_at_defaults(graph, {"m": (2, 8)})
    generated = fit_inputs(graph)
    assert generated.plan.sizes == {"batch": 2, "k": 1}
    assert generated.attempts[0].sizes == {"batch": 2, "k": 8}
    assert "Expand" in generated.attempts[0].error
    assert "found by trying" in generated.describe()
    assert to_json(generated)["tried"][0]["sizes"] == {"batch": 2, "k": 8}


def test_sizes_the_file_states_are_tried_before_guesses():
    graph = _graph(sized_models.stated_sizes())
    generated = fit_inputs(graph)
    assert generated.plan.sizes == {"batch": 3, "k": 6}
    assert generated.plan.origin == "the sizes the file states"


def test_a_model_with_operators_that_may_not_check_sizes_is_tried_in_a_child():
    graph = _graph(sized_models.hidden_target("com.microsoft"))
    assert needs_isolation(graph) and not needs_isolation(_graph(sized_models.hidden_target()))
    generated = fit_inputs(graph)
    assert generated.plan.sizes["k"] == 1 and generated.attempts


# ---- refusing ------------------------------------------------------------------------------

def test_a_model_that_runs_at_no_size_is_refused_with_what_was_tried():
    graph = _graph(sized_models.impossible())
    with pytest.raises(RunFailedError) as caught:
        fit_inputs(graph)
    message = str(caught.value)
    assert "found no input sizes at which onnxruntime runs graph 'sized'" in message
    assert "tried n=2 (the model's structure)" in message
    assert "it needs n = 15/4" in message
    assert "--bind n=..." in message and "--inputs" in message


def test_a_binding_the_model_contradicts_is_named_in_the_refusal():
    graph = _graph(sized_models.seq_first_heads())
    with pytest.raises(RunFailedError) as caught:
        Verifier(graph, bindings={"seq": 8})
    message = str(caught.value)
    assert "runs graph 'sized' with seq=8 bound: tried" in message
    assert "node 'split_heads'" in message and "Reshape" in message
