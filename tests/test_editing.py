"""The edit engine: every kind of edit, run in onnxruntime against what it should compute;
every refusal, naming the edit; all edits or none; the limits; and the one-edit fixes it
offers for near misses, tried before they are offered."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest

from compiler_core.compilation import compile_model
from compiler_core.editing import (EDITS_METADATA_KEY, MAX_EDITS, MAX_TENSOR_VALUES, Bypass,
                                   Delete, Insert, Rename, Rewire, SetAttribute, SetTensor,
                                   apply_edits, edits_from_json, edits_to_json,
                                   read_edits_text)
from compiler_core.editing.effect import numerical_effect
from compiler_core.editing.suggestions import suggest_edits
from compiler_core.errors import EditError, GraphLabError
from compiler_core.ir import load_model
from compiler_core.records import to_json
from graphlab.samples import resolve_model

from edit_models import (C, S, W, X, layernorm_opset18, probed_linear, reference, run, toy,
                         with_if_body)


def _apply(edits, model=None):
    return apply_edits(model if model is not None else toy(), edits)


def _refused(edits, model=None) -> str:
    with pytest.raises(EditError) as caught:
        _apply(edits, model)
    return str(caught.value)


def _rewrites(graph, pass_name: str) -> int:
    result = compile_model(graph, "O2").result
    return next(s.rewrites for s in result.snapshots if s.pass_name == pass_name)


# ------------------------------------------------------------------------------ each kind
def test_set_attribute_changes_what_the_node_computes():
    edited = _apply([{"edit": "insert", "op": "LeakyRelu", "on": "add",
                      "consumers": ["relu"], "attributes": {"alpha": 0.5}, "name": "leaky"},
                     {"edit": "set_attribute", "node": "leaky", "name": "alpha",
                      "value": 0.25}])
    leaky = next(n for n in edited.model.graph.node if n.name == "leaky")
    assert onnx.helper.get_attribute_value(leaky.attribute[0]) == pytest.approx(0.25)
    add = X @ W + C
    expected = np.maximum(np.where(add > 0, add, 0.25 * add), 0) * S
    np.testing.assert_allclose(run(edited.model)["y"], expected, rtol=1e-6)


def test_set_attribute_on_a_teaching_sample_makes_layernorm_fire():
    path = resolve_model("teach_layernorm")
    before = _rewrites(load_model(path), "recognize_layernorm")
    edited = apply_edits(path, [
        SetAttribute("ln_wrongaxis_mean", "axes", (-1,)),
        SetAttribute("ln_wrongaxis_var", "axes", (-1,))])
    assert _rewrites(edited.graph, "recognize_layernorm") == before + 1
    attrs = {n.name: {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
             for n in edited.model.graph.node}
    assert attrs["ln_wrongaxis_mean"]["axes"] == [-1]


def test_removing_an_attribute_falls_back_to_the_default():
    model = toy()
    model.graph.node[3].attribute.append(onnx.helper.make_attribute("alpha", 0.5))
    model.graph.node[3].op_type = "LeakyRelu"
    edited = _apply([SetAttribute("relu", "alpha", None)], model)
    add = X @ W + C
    np.testing.assert_allclose(run(edited.model)["y"], np.where(add > 0, add, 0.01 * add) * S,
                               rtol=1e-6)


def test_set_tensor_fills_an_initializer_or_sets_every_element():
    filled = _apply([SetTensor("s", 3.0)])
    np.testing.assert_allclose(run(filled.model)["y"], reference(s=np.float32(3.0))[0],
                               rtol=1e-6)
    new_w = np.arange(16, dtype=np.float32).reshape(4, 4) / 10
    listed = _apply([{"edit": "set_tensor", "name": "w", "value": new_w.tolist()}])
    np.testing.assert_allclose(run(listed.model)["y"], reference(w=new_w)[0], rtol=1e-5)
    flat = _apply([{"edit": "set_tensor", "name": "w", "value": new_w.reshape(-1).tolist()}])
    np.testing.assert_allclose(run(flat.model)["y"], reference(w=new_w)[0], rtol=1e-5)


def test_set_tensor_sets_a_constant_nodes_value_and_can_change_its_shape():
    edited = _apply([{"edit": "set_tensor", "name": "c", "value": [1.5], "shape": [1]}])
    np.testing.assert_allclose(run(edited.model)["y"], reference(c=np.float32(1.5))[0],
                               rtol=1e-6)
    constant = next(n for n in edited.model.graph.node if n.name == "const_c")
    assert list(onnx.helper.get_attribute_value(constant.attribute[0]).dims) == [1]


def test_set_tensor_keeps_the_element_type():
    edited = _apply([SetTensor("ints", (7, -2))])
    tensor = next(t for t in edited.model.graph.initializer if t.name == "ints")
    assert tensor.data_type == onnx.TensorProto.INT64
    assert onnx.numpy_helper.to_array(tensor).tolist() == [7, -2]


def test_bypass_makes_readers_read_the_first_input():
    edited = _apply([Bypass("relu")])
    add = X @ W + C
    np.testing.assert_allclose(run(edited.model)["y"], add * S, rtol=1e-6)
    assert "relu" not in {n.name for n in edited.model.graph.node}


def test_bypassing_what_computes_a_graph_output_keeps_the_outputs_name():
    edited = _apply([Bypass("scale_mul")])
    outputs = run(edited.model)
    assert list(outputs) == ["y", "y2"]
    np.testing.assert_allclose(outputs["y"], np.maximum(X @ W + C, 0), rtol=1e-6)
    assert "s" not in {t.name for t in edited.model.graph.initializer}   # fed only it


def test_rewire_points_an_input_at_another_value():
    edited = _apply([Rewire("scale_mul", 0, "add")])
    np.testing.assert_allclose(run(edited.model)["y"], (X @ W + C) * S, rtol=1e-6)
    assert "relu" not in {n.name for n in edited.model.graph.node}   # fed only scale_mul


def test_delete_removes_a_side_output_and_what_fed_only_it():
    edited = _apply([Delete("side")])
    assert [o.name for o in edited.model.graph.output] == ["y"]
    np.testing.assert_allclose(run(edited.model)["y"], reference()[0], rtol=1e-6)
    assert edited.nodes_after == edited.nodes_before - 1


def test_delete_unblocks_the_fusion_the_side_branch_declined():
    path = resolve_model("teach_conv_bn")
    before = _rewrites(load_model(path), "fold_batchnorm")
    edited = apply_edits(path, [Delete("relu_side")])
    assert _rewrites(edited.graph, "fold_batchnorm") == before + 1


def test_insert_puts_a_node_on_an_edge_before_the_consumers_named():
    edited = _apply([Insert("Mul", "add", inputs=(0.5,), consumers=("relu",), name="halve")])
    outputs = run(edited.model)
    add = X @ W + C
    np.testing.assert_allclose(outputs["y"], np.maximum(add * 0.5, 0) * S, rtol=1e-6)
    np.testing.assert_allclose(outputs["y2"], 1 / (1 + np.exp(-add)), rtol=1e-6)  # untouched
    assert "halve" in edited.touched_nodes


def test_insert_on_every_reader_and_with_attributes():
    edited = _apply([{"edit": "insert", "op": "Clip", "on": "mm",
                      "inputs": [-0.5, 0.5]}])
    clipped = np.clip(X @ W, -0.5, 0.5) + C
    np.testing.assert_allclose(run(edited.model)["y"], np.maximum(clipped, 0) * S, rtol=1e-6)


def test_rename_a_node_and_a_value():
    edited = _apply([Rename("activation", node="relu"), Rename("sum", value="add"),
                     Bypass("activation")])
    names = {n.name for n in edited.model.graph.node}
    assert "activation" not in names and "relu" not in names
    assert any("sum" in n.input for n in edited.model.graph.node)
    np.testing.assert_allclose(run(edited.model)["y"], (X @ W + C) * S, rtol=1e-6)


def test_unnamed_nodes_go_by_the_importers_name_whatever_came_before():
    assert "Add_2" in {n.name for n in load_model(toy().SerializeToString()).nodes}
    edited = _apply([Delete("side"), Bypass("Add_2")])   # Add_2 is still Add_2 after a delete
    np.testing.assert_allclose(run(edited.model)["y"], np.maximum(X @ W, 0) * S, rtol=1e-6)


def test_nodes_that_share_a_name_go_by_the_names_the_importer_gives_them():
    model = toy()
    model.graph.node[4].name = "relu"   # the Sigmoid now shares the Relu's name
    shown = {n.name: n.op_type for n in load_model(model.SerializeToString()).nodes}
    assert shown["relu"] == "Relu" and shown["relu_1"] == "Sigmoid"
    edited = _apply([Delete("relu_1")], model)
    assert [o.name for o in edited.model.graph.output] == ["y"]


def test_edits_are_written_into_the_model_and_accumulate():
    first = _apply([Bypass("relu")])
    second = apply_edits(first.model, [Delete("side")])
    written = {p.key: p.value for p in second.model.metadata_props}[EDITS_METADATA_KEY]
    assert json.loads(written) == [{"edit": "bypass", "node": "relu"},
                                   {"edit": "delete", "node": "side"}]


# ------------------------------------------------------------------------------ refusals
@pytest.mark.parametrize("edits, words", [
    ([Bypass("nope")], ["edit 1 (bypass)", "no node called 'nope'"]),
    ([Bypass("relux")], ["did you mean relu"]),
    ([SetAttribute("relu", "alpha", 1.0)], ["Relu has no attribute 'alpha'"]),
    ([SetAttribute("mm", "transA", 1)], ["MatMul has no attribute", "takes no attributes"]),
    ([SetAttribute("relu", "alpha", None)], ["has no attribute 'alpha'"]),
    ([SetAttribute("const_c", "value", 1.0)], ["set_tensor on its output 'c'"]),
    ([SetTensor("x", 1.0)], ["'x' is a graph input"]),
    ([SetTensor("mm", 1.0)], ["computed at run time by MatMul 'mm'"]),
    ([SetTensor("w", (1.0, 2.0))], ["2 values given for shape [4, 4]"]),
    ([SetTensor("ints", 1.5)], ["must be an integer"]),
    ([SetTensor("ints", 2 ** 70)], ["does not fit in int64"]),
    ([SetTensor("ints", "three")], ["must be an integer"]),
    ([SetTensor("w", 1.0, (3, 3))], ["not well typed"]),
    ([Bypass("const_c")], ["has no first input"]),
    ([Rewire("mm", 0, "y")], ["cycle"]),
    ([Rewire("mm", 5, "x")], ["has inputs 0..1, not 5"]),
    ([Rewire("mm", 1, "")], ["not optional"]),
    ([Rewire("mm", 1, "nothing_here")], ["no value called 'nothing_here'"]),
    ([Delete("Add_2")], ["is read by Relu 'relu'", "bypass it instead"]),
    ([Delete("side"), Delete("relu")], ["edit 2 (delete)", "read by Mul"]),
    ([Insert("Frobnicate", "add")], ["no op 'Frobnicate'"]),
    ([Insert("Relu", "add", consumers=("mm",))], ["does not read 'add'"]),
    ([Insert("Relu", "y")], ["no node reads 'y'"]),
    ([Insert("Relu", "add", inputs=("w",))], ["Relu takes 1..1 inputs, not 2"]),
    ([Insert("Relu", "add", attributes=(("alpha", 1.0),))], ["Relu has no attribute 'alpha'"]),
    ([Insert("Cast", "add", consumers=("relu",))], ["needs attribute to"]),
    ([Insert("Cast", "add", attributes=(("to", 7),), consumers=("relu",))],
     ["not well typed", "Relu"]),
    ([Rename("side", node="relu")], ["a node called 'side' exists already"]),
    ([Rename("w", value="add")], ["a value called 'w' exists already"]),
])
def test_each_refusal_names_the_edit_and_what_was_wrong(edits, words):
    message = _refused(edits)
    assert message.startswith(f"edit {len(edits)} (") or "edit 1" in message
    for word in words:
        assert word in message, message
    assert "\n" not in message


def test_a_value_read_inside_a_body_is_not_rewired_behind_its_back():
    message = _refused([Bypass("Add_2")], with_if_body())
    assert "read inside the body of If 'branchy'" in message


def test_deleting_what_computes_every_output_is_refused():
    model = toy()
    del model.graph.output[1]
    del model.graph.node[4]     # no side branch: scale_mul computes the only output
    assert "compute nothing" in _refused([Delete("scale_mul")], model)


def test_nothing_is_half_applied(tmp_path):
    path = tmp_path / "toy.onnx"
    onnx.save(toy(), path)
    on_disk = path.read_bytes()
    given = toy()
    kept = given.SerializeToString()
    for source in (str(path), given, on_disk):
        with pytest.raises(EditError, match=r"edit 3 \(bypass\)"):
            apply_edits(source, [Bypass("relu"), SetTensor("s", 5.0), Bypass("gone")])
    assert path.read_bytes() == on_disk and given.SerializeToString() == kept


def test_a_model_refused_as_given_is_not_blamed_on_an_edit():
    model = toy()
    del model.graph.output[:]          # computes nothing: the importer refuses it as given
    with pytest.raises(GraphLabError) as caught:
        apply_edits(model, [Rename("r", node="relu")])
    assert not isinstance(caught.value, EditError)
    assert "no graph outputs" in str(caught.value)


# ------------------------------------------------------------------------------ as data
def test_edits_round_trip_through_json():
    data = [{"edit": "set_attribute", "node": "n", "name": "axes", "value": [-1]},
            {"edit": "set_tensor", "name": "t", "value": [[1, 2], [3, 4]], "shape": [2, 2]},
            {"edit": "bypass", "node": "b"},
            {"edit": "rewire", "node": "r", "input": 1, "value": "v"},
            {"edit": "delete", "node": "d"},
            {"edit": "insert", "op": "Mul", "on": "v", "inputs": [0.5], "consumers": ["c"],
             "attributes": {"k": 1}, "name": "m"},
            {"edit": "rename", "node": "a", "to": "b"},
            {"edit": "rename", "value": "v", "to": "w"}]
    assert edits_to_json(edits_from_json(data)) == data
    assert edits_from_json(json.loads(json.dumps(to_json(edits_from_json(data))))) == \
        edits_from_json(data)


@pytest.mark.parametrize("data, words", [
    ({"edit": "bypass"}, ["must be a JSON list"]),
    ([{"edit": "explode", "node": "n"}], ["edit 1", "unknown kind 'explode'", "kinds:"]),
    ([{"node": "n"}], ["no 'edit' field"]),
    ([{"edit": "bypass", "node": "n", "nodes": "m"}], ["unknown field 'nodes'"]),
    ([{"edit": "bypass", "node": "a"}, {"edit": "rewire", "node": "n", "input": 0}],
     ["edit 2 (rewire)", "missing field 'value'"]),
    ([{"edit": "bypass", "node": 3}], ["'node' must be a name"]),
    ([{"edit": "rewire", "node": "n", "input": -1, "value": "v"}], ["input's position"]),
    ([{"edit": "set_tensor", "name": "t", "value": {"a": 1}}], ["must be a number"]),
    ([{"edit": "set_tensor", "name": "t", "value": 1, "shape": [2, -1]}], ["list of sizes"]),
    ([{"edit": "rename", "to": "x"}], ["exactly one of 'node' and 'value'"]),
    ([{"edit": "rename", "node": "a", "value": "b", "to": "x"}], ["exactly one"]),
    ([{"edit": "insert", "op": "Relu", "on": "v", "consumers": []}], ["non-empty list"]),
    ("x" * 10, ["must be a JSON list"]),
])
def test_malformed_edits_are_refused_as_data(data, words):
    with pytest.raises(EditError) as caught:
        edits_from_json(data)
    for word in words:
        assert word in str(caught.value), str(caught.value)


def test_limits_keep_an_edit_list_small():
    with pytest.raises(EditError, match=f"more than the {MAX_EDITS} allowed"):
        edits_from_json([{"edit": "bypass", "node": "n"}] * (MAX_EDITS + 1))
    with pytest.raises(EditError, match="values, more than"):
        edits_from_json([{"edit": "set_tensor", "name": "t",
                          "value": [0.0] * (MAX_TENSOR_VALUES + 1)}])
    with pytest.raises(EditError, match="bytes, more than"):
        read_edits_text(" " * (3 << 20))
    with pytest.raises(EditError, match="not JSON"):
        read_edits_text("[{'edit': 'bypass'}]")
    with pytest.raises(EditError, match="characters long"):
        edits_from_json([{"edit": "bypass", "node": "n" * 600}])


# ------------------------------------------------------------------------------ effect
def test_numerical_effect_is_measured_in_onnxruntime():
    before = load_model(toy().SerializeToString())
    edited = _apply([SetTensor("s", 3.0)])
    effect = numerical_effect(before, edited.graph, inputs={"x": X})
    want = np.abs(reference(s=np.float32(3.0))[0] - reference()[0]).max()
    by_name = {o.name: o for o in effect.outputs}
    assert by_name["y"].max_abs_change == pytest.approx(want, rel=1e-5)
    assert by_name["y2"].max_abs_change == 0.0
    assert effect.changed and "output y changes by up to" in effect.summary()
    same = numerical_effect(before, _apply([Rename("activation", node="relu")]).graph)
    assert not same.changed and "do not change" in same.summary()
    gone = numerical_effect(before, _apply([Delete("side")]).graph)
    assert "y2" in gone.summary() and "no longer computed" in gone.summary()


# ------------------------------------------------------------------------------ suggestions
def _close(got, want) -> bool:
    """Equal, numbers within float32's rounding, through lists and dicts (pytest.approx does
    not look inside nested data)."""
    if isinstance(want, dict):
        return isinstance(got, dict) and got.keys() == want.keys() and all(
            _close(got[k], want[k]) for k in want)
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(
            _close(g, w) for g, w in zip(got, want))
    if isinstance(want, float):
        return got == pytest.approx(want, rel=1e-6)
    return got == want


@pytest.mark.parametrize("sample, pass_name, edits", [
    ("teach_conv_bn", "fold_batchnorm", [{"edit": "delete", "node": "relu_side"}]),
    ("teach_gelu", "recognize_gelu",
     [{"edit": "set_tensor", "name": "gelu_wrongconst_sqrt2", "value": 2 ** 0.5}]),
    ("teach_layernorm", "recognize_layernorm",
     [{"edit": "set_attribute", "node": "ln_wrongaxis_mean", "name": "axes", "value": [-1]},
      {"edit": "set_attribute", "node": "ln_wrongaxis_var", "name": "axes", "value": [-1]}]),
])
def test_a_near_miss_is_offered_the_fix_that_makes_it_fire(sample, pass_name, edits):
    offered = suggest_edits(resolve_model(sample), "O2")
    fix = next(s for s in offered if s.pass_name == pass_name)
    assert _close(edits_to_json(fix.edits), edits)
    assert fix.rewrites_after == fix.rewrites_before + 1
    edited = apply_edits(resolve_model(sample), fix.edits)
    assert _rewrites(edited.graph, pass_name) == fix.rewrites_after   # it fires, for real
    assert fix.effect is not None and fix.effect.changed


def test_nothing_is_offered_where_no_single_value_fixes_it():
    assert suggest_edits(resolve_model("teach_matmul_bias"), "O2") == []


def test_suggestions_start_from_the_users_edits():
    fixed = [{"edit": "delete", "node": "relu_side"}]
    assert not any(s.pass_name == "fold_batchnorm" for s in
                   suggest_edits(resolve_model("teach_conv_bn"), "O2", edits=fixed))


def test_the_axes_constant_of_an_opset_18_mean_is_the_fix():
    [fix] = [s for s in suggest_edits(layernorm_opset18([1]).SerializeToString(), "O2")
             if s.pass_name == "recognize_layernorm"]
    assert edits_to_json(fix.edits) == [{"edit": "set_tensor", "name": "axes", "value": [-1]}]
    assert fix.rewrites_after == fix.rewrites_before + 1


def test_a_rule_that_fires_where_another_fired_before_counts_as_a_fix():
    offered = suggest_edits(probed_linear().SerializeToString(), "O2")
    fix = next(s for s in offered if edits_to_json(s.edits) == [{"edit": "delete",
                                                                 "node": "probe"}])
    assert fix.pattern == "matmul_bias_act" and fix.site == "relu"
    assert fix.rewrites_after == fix.rewrites_before   # one fused node either way...
    assert "matmul_bias_act matches at relu" in fix.outcome()   # ...now with the Relu in it
    assert [o.name for o in fix.effect.outputs if o.note] == ["y2"]
