"""IR invariants: SSA wiring, stable ids, cheap copies, output names kept, subgraph scopes."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler_core.errors import InvalidGraphError
from compiler_core.ir import (Graph, Value, format_graph, load_model, to_bytes, to_model_proto)
from compiler_core.passes.framework.base import PassContext
from compiler_core.passes.framework.rewrite import fuse_nodes


def _mlp_bytes() -> bytes:
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3) / 10, "w")
    b = numpy_helper.from_array(np.ones(3, np.float32), "b")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"], name="/layer/MatMul"),
             helper.make_node("Add", ["mm", "b"], ["add"], name="/layer/Add"),
             helper.make_node("Relu", ["add"], ["y"], name="/layer/Relu")]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, ["batch", 4])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], [w, b])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def _run(graph_or_bytes, feed):
    data = graph_or_bytes if isinstance(graph_or_bytes, bytes) else to_bytes(graph_or_bytes)
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return session.run(None, feed)


def test_ssa_wiring_and_shapes():
    graph = load_model(_mlp_bytes())
    graph.check()
    matmul, add, relu = graph.nodes
    assert [n.op_type for n in graph.nodes] == ["MatMul", "Add", "Relu"]
    assert matmul.outputs[0].users() == [add]
    assert add.inputs[0].producer is matmul
    assert relu.outputs[0].is_graph_output
    assert relu.outputs[0].shape == ("batch", 3)      # inferred through the graph
    assert graph.initializers["w"].const.flags.writeable is False
    assert matmul.scope == "/layer"


def test_copy_shares_weights_and_keeps_ids():
    graph = load_model(_mlp_bytes())
    copy = graph.copy()
    copy.check()
    assert copy.initializers["w"].const is graph.initializers["w"].const
    assert [n.id for n in copy.nodes] == [n.id for n in graph.nodes]
    assert copy.nodes[0] is not graph.nodes[0]
    copy.remove_node(copy.nodes[2])
    assert len(graph) == 3  # the original is untouched


def test_check_catches_a_stale_use():
    graph = load_model(_mlp_bytes())
    add = graph.nodes[1]
    add._inputs = (add.inputs[0], graph.values["w"])  # bypassing the API: uses inconsistent
    with pytest.raises(InvalidGraphError, match="stale use by '/layer/Add'"):
        graph.check()


def test_node_inputs_are_read_only_and_rewiring_keeps_uses():
    graph = load_model(_mlp_bytes())
    add = graph.nodes[1]
    with pytest.raises(TypeError):
        add.inputs[1] = graph.values["w"]
    with pytest.raises(AttributeError):
        add.inputs = []
    bias = add.inputs[1]
    add.replace_input(1, graph.values["w"])
    assert (add, 1) in graph.values["w"].uses and (add, 1) not in bias.uses
    with pytest.raises(ValueError, match="already wired"):
        add.attach_inputs([bias])


def test_replace_all_uses_keeps_the_output_name():
    graph = load_model(_mlp_bytes())
    relu = graph.nodes[2]
    add_out = graph.nodes[1].outputs[0]
    graph.replace_all_uses(relu.outputs[0], add_out)
    graph.remove_node(relu)
    graph.check()
    assert [v.name for v in graph.outputs] == ["y"]
    assert graph.nodes[-1].op_type == "Add"
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    expected = x @ (np.arange(12, dtype=np.float32).reshape(4, 3) / 10) + 1
    np.testing.assert_allclose(_run(graph, {"x": x})[0], expected, rtol=1e-6)


def test_replacing_an_output_by_an_input_is_refused():
    graph = load_model(_mlp_bytes())
    relu = graph.nodes[2]
    assert not graph.can_replace_uses(relu.outputs[0], graph.values["x"])
    with pytest.raises(InvalidGraphError, match="rename the model's output"):
        graph.replace_all_uses(relu.outputs[0], graph.values["x"])


def test_unsorted_file_is_ordered_topologically():
    nodes = [helper.make_node("Relu", ["a"], ["y"], name="second"),
             helper.make_node("Neg", ["x"], ["a"], name="first")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", 1, [2])],
                              [helper.make_tensor_value_info("y", 1, [2])])
    ir = load_model(helper.make_model(graph).SerializeToString())
    assert [n.name for n in ir.nodes] == ["first", "second"]
    onnx.checker.check_model(to_model_proto(ir))


def test_fused_node_exports_as_a_function_and_runs():
    graph = load_model(_mlp_bytes())
    fused = fuse_nodes(graph, PassContext(pass_name="test"), graph.nodes, "FusedMatMulAddRelu",
                       "matmul+add+relu")
    graph.check()
    assert len(graph) == 1 and fused.body is not None and len(fused.body) == 3
    assert sorted(fused.provenance.sources) == [0, 1, 2]
    assert [n.id for n in fused.body.nodes] == [0, 1, 2]   # body nodes keep their ids
    model = to_model_proto(graph)
    onnx.checker.check_model(model)
    assert [f.name for f in model.functions] == ["FusedMatMulAddRelu"]
    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    expected = np.maximum(x @ (np.arange(12, dtype=np.float32).reshape(4, 3) / 10) + 1, 0)
    np.testing.assert_allclose(_run(graph, {"x": x})[0], expected, rtol=1e-6)


def test_if_body_reading_an_outer_value_is_a_use_and_follows_renames():
    then_graph = helper.make_graph([helper.make_node("Add", ["outer", "outer"], ["t"])], "then",
                                   [], [helper.make_tensor_value_info("t", 1, [2])])
    else_graph = helper.make_graph([helper.make_node("Neg", ["outer"], ["e"])], "else", [],
                                   [helper.make_tensor_value_info("e", 1, [2])])
    nodes = [helper.make_node("Relu", ["x"], ["outer"], name="relu"),
             helper.make_node("Identity", ["outer"], ["alias"], name="alias"),
             helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=then_graph,
                              else_branch=else_graph)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", 1, [2]),
                                           helper.make_tensor_value_info("cond", 9, [])],
                              [helper.make_tensor_value_info("y", 1, [2]),
                               helper.make_tensor_value_info("alias", 1, [2])])
    ir = load_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
                    .SerializeToString())
    branch = ir.node_by_name("branch")
    outer = ir.values["outer"]
    assert branch.implicit_inputs == [outer]
    assert branch in outer.users()
    fresh = ir.add_node("Abs", [ir.values["x"]], 1, name="abs").outputs[0]
    ir.replace_all_uses(outer, fresh)
    ir.check()
    assert branch.implicit_inputs == [fresh]
    assert branch.attrs["then_branch"].node[0].input[0] == fresh.name
    x = np.array([-1.0, 2.0], np.float32)
    out = _run(ir, {"x": x, "cond": np.array(True)})
    np.testing.assert_allclose(out[0], 2 * np.abs(x))


def test_add_node_with_fresh_outputs_and_unique_names():
    graph = Graph("g")
    x = graph.add_input(Value("x", TensorProto.FLOAT, (2,)))
    a = graph.add_node("Relu", [x], 1, name="r")
    b = graph.add_node("Relu", [a.outputs[0]], 1, name="r")
    graph.set_outputs([b.outputs[0]])
    graph.check()
    assert a.name != b.name
    assert a.outputs[0].name != b.outputs[0].name


def test_printer_reads_like_fx():
    text = format_graph(load_model(_mlp_bytes()))
    assert "graph mlp(%x : float32[batch,4])" in text
    assert "%add : float32[batch,3] = Add(%mm, %b)  # /layer/Add" in text
    assert text.strip().endswith("return %y\n}")


def test_ir_version_is_one_onnxruntime_reads():
    model = onnx.ModelProto()
    model.ParseFromString(_mlp_bytes())
    assert model.ir_version >= 11  # onnx's default, too new for onnxruntime
    exported = to_model_proto(load_model(_mlp_bytes()))
    assert exported.ir_version == 8 or exported.ir_version <= 10
    ort.InferenceSession(exported.SerializeToString(), providers=["CPUExecutionProvider"])


def test_old_ir_models_list_their_initializers_as_inputs():
    w = numpy_helper.from_array(np.ones(2, np.float32), "w")
    unused = numpy_helper.from_array(np.ones(2, np.float32), "unused")
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "old",
                              [helper.make_tensor_value_info("x", 1, [2]),
                               helper.make_tensor_value_info("w", 1, [2]),
                               helper.make_tensor_value_info("unused", 1, [2])],
                              [helper.make_tensor_value_info("y", 1, [2])], [w, unused])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 7)])
    model.ir_version = 3
    exported = to_model_proto(load_model(model.SerializeToString()))
    assert exported.ir_version == 3
    assert {"w", "unused"} <= {i.name for i in exported.graph.input}
    ort.InferenceSession(exported.SerializeToString(), providers=["CPUExecutionProvider"])


def test_empty_and_scalar_weights_export():
    graph = load_model(_mlp_bytes())
    empty = graph.add_initializer("empty", np.zeros((0, 3), np.float32))
    scalar = graph.add_initializer("scalar", np.array(2.5, np.float32))
    node = graph.add_node("Concat", [empty, empty], 1, attrs={"axis": 0}, name="cat")
    graph.set_outputs(list(graph.outputs) + [node.outputs[0], scalar])
    again = load_model(to_bytes(graph))
    assert again.initializers["empty"].const.shape == (0, 3)
    assert float(again.initializers["scalar"].const) == 2.5


def test_pickle_round_trip_of_a_deep_graph():
    import pickle

    graph = Graph("deep")
    current = graph.add_input(Value("x", TensorProto.FLOAT, (2,)))
    for i in range(5000):   # deeper than Python's recursion limit
        current = graph.add_node("Relu", [current], 1, name=f"r{i}").outputs[0]
    graph.set_outputs([current])
    again = pickle.loads(pickle.dumps(graph))
    again.check()
    assert [n.id for n in again.nodes] == [n.id for n in graph.nodes]
    assert again.outputs[0].name == current.name


def _uses(graph: Graph) -> dict[str, list[tuple[int, int]]]:
    return {name: [(node.id, index) for node, index in value.uses]
            for name, value in graph.values.items()}


def test_copy_is_the_graph_its_records_rebuild():
    """``copy`` builds object to object what ``__setstate__(__getstate__())`` builds from
    records: the same fields, and every value's readers in the same order (after a rewiring
    that put them out of node order), implicit readers included."""
    then_graph = helper.make_graph([helper.make_node("Neg", ["outer"], ["t"])], "then", [],
                                   [helper.make_tensor_value_info("t", 1, [2])])
    nodes = [helper.make_node("Relu", ["x"], ["outer"], name="relu"),
             helper.make_node("Abs", ["outer"], ["a"], name="abs"),
             helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=then_graph,
                              else_branch=then_graph)]
    model = helper.make_model(helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", 1, [2]),
                     helper.make_tensor_value_info("cond", 9, [])],
        [helper.make_tensor_value_info("y", 1, [2]), helper.make_tensor_value_info("a", 1, [2])]),
        opset_imports=[helper.make_opsetid("", 17)])
    graph = load_model(model.SerializeToString())
    neg = graph.add_node("Neg", [graph.values["x"]], 1, name="neg")
    graph.node_by_name("abs").replace_input(0, neg.outputs[0])
    graph.node_by_name("abs").replace_input(0, graph.values["outer"])  # now read after If
    copy = graph.copy()
    rebuilt = Graph.__new__(Graph)
    rebuilt.__setstate__(graph.__getstate__())
    copy.check()
    assert copy.structure_key() == rebuilt.structure_key()
    assert _uses(copy) == _uses(rebuilt)
    assert _uses(copy)["outer"] == [(1, 0), (2, -1)]   # node order, not the rewiring's
    assert [n.id for n in copy.nodes] == [n.id for n in graph.nodes]
    assert all(a is not b for a, b in zip(copy.nodes, graph.nodes))


def test_nodes_added_out_of_order_are_sorted_and_a_cycle_is_caught():
    graph = Graph("g")
    x = graph.add_input(Value("x", TensorProto.FLOAT, (2,)))
    late = graph.add_node("Relu", [x], 1, name="late")
    early = graph.add_node("Neg", [x], 1, name="early", order=late.order - 0.5)
    reader = graph.add_node("Abs", [late.outputs[0]], 1, name="reader")
    assert [n.name for n in graph.nodes] == ["early", "late", "reader"]
    graph.set_outputs([reader.outputs[0], early.outputs[0]])
    late.replace_input(0, reader.outputs[0])   # late reads reader, which reads late
    with pytest.raises(InvalidGraphError, match="cycle"):
        graph.check()


class _Made:
    """An object the collector tracks, to find it among a generation's."""


def test_a_paused_phase_hands_what_it_made_to_the_oldest_generation_unless_objects_are_kept():
    import gc

    from compiler_core.ir.collection import collection_paused, freeze_kept, unfreeze_kept

    made = []
    phase = collection_paused(lambda: made.append(_Made()))
    phase()
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert any(o is made[0] for o in gc.get_objects(generation=2))

    kept = _Made()
    freeze_kept()   # a server's held workspaces: they stay out of every collection's walk
    phase()
    assert gc.isenabled() and not any(o is kept for o in gc.get_objects())
    assert any(o is made[1] for o in gc.get_objects())   # in sight: collectable
    unfreeze_kept()
    assert any(o is kept for o in gc.get_objects(generation=2))
