"""Representative sizes for unbound dims, and pricing that learns every shape at them."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto

from compiler_core.hardware.cost import graph_cost
from compiler_core.hardware.representative_sizes import (GIVEN, HINT, IMAGE_SIDE,
                                                         SEQUENCE_LENGTH, ChosenSizes,
                                                         choose_sizes)
from compiler_core.compilation import sized
from compiler_core.hardware.targets import get_target
from compiler_core.ir.shape_inference import is_unnamed_dim
from compiler_core.records import to_json
from hardware_graphs import Builder, load_sample

I64 = TensorProto.INT64


def sizes_of(graph, **kwargs) -> dict[str, tuple[int, str]]:
    return {c.dim: (c.size, c.reason) for c in choose_sizes(graph, **kwargs).chosen}


def graph_with_inputs(*shapes, table_rows: int | None = None):
    b = Builder()
    values = [b.input(f"x{i}", shape) for i, shape in enumerate(shapes)]
    if table_rows is not None:
        b.graph.add_initializer("model.embeddings.position_embeddings.weight",
                                np.zeros((table_rows, 4), np.float32))
    return b.outputs(*(b.op("Relu", [v], v.shape) for v in values))


def test_names_and_the_model_choose_the_sizes():
    chosen = sizes_of(graph_with_inputs(("batch", "seq"), ("N", 3, "height", "width"),
                                        ("d0", "features")))
    assert chosen["batch"][0] == 1 and "batch-like" in chosen["batch"][1]
    assert chosen["seq"] == (SEQUENCE_LENGTH, f"a sequence-like name: {SEQUENCE_LENGTH} tokens")
    assert chosen["N"][0] == 1
    assert chosen["height"][0] == chosen["width"][0] == IMAGE_SIDE
    assert chosen["d0"] == (1, "the leading axis, taken as the batch")
    assert chosen["features"][0] == SEQUENCE_LENGTH and "guessed" in chosen["features"][1]


def test_a_short_position_table_caps_the_sequence():
    chosen = sizes_of(graph_with_inputs(("batch", "sequence_length"), table_rows=64))
    assert chosen["sequence_length"] == (64, "a sequence-like name; the model's position "
                                             "table holds 64 rows")
    long_table = sizes_of(graph_with_inputs(("batch", "seq"), table_rows=512))
    assert long_table["seq"][0] == SEQUENCE_LENGTH


def test_given_sizes_win_then_hints_then_names():
    graph = graph_with_inputs(("batch", "seq"))
    chosen = choose_sizes(graph, given={"seq": 7, "other": 3}, hints={"batch": 4, "seq": 9})
    assert chosen.bindings == {"batch": 4, "seq": 7, "other": 3}
    assert [c.reason for c in chosen.chosen] == [HINT, GIVEN, GIVEN]
    assert not chosen.all_given and chosen.text() == "batch=4,seq=7,other=3"
    assert "batch: the sample's usual size; seq, other: given" in chosen.describe()
    mine = choose_sizes(graph, given={"batch": 2, "seq": 5})
    assert mine.all_given and mine.describe() == "batch=2,seq=5 (as given)"
    assert ChosenSizes.from_dict(to_json(chosen)) == chosen
    assert choose_sizes(graph_with_inputs((2, 3))).describe().startswith("none needed")


def test_sizing_learns_every_dim_shape_inference_could_not_name():
    graph = load_sample("bert_tiny_op13")
    bindings = {"batch": 1, "seq": 128}
    unnamed = [d for n in graph.nodes for v in n.outputs if v is not None and v.shape
               for d in v.shape if is_unnamed_dim(d)]
    assert len(unnamed) > 20           # the export computes its shapes at run time
    priced = sized(graph, bindings)
    assert [n.id for n in priced.nodes] == [n.id for n in graph.nodes]
    assert all(isinstance(d, int) for n in priced.nodes for v in n.outputs if v is not None
               for d in v.shape)
    assert graph.inputs[0].shape == ("batch", "seq")   # the user's graph keeps its own shapes
    assert sized(priced, bindings) is priced


def test_the_roofline_of_bert_tells_the_truth_at_representative_sizes():
    graph = load_sample("bert_tiny_op13")
    ridge = get_target("asic32").ridge_point()
    sizes = {"batch": 1, "seq": 128}
    cost = graph_cost(sized(graph, sizes), "asic32", sizes)
    assert cost.ops_with_assumed_dims == 0 and cost.notes == []
    by_name = {op.node: op for op in cost.ops}
    ffn = [op for name, op in by_name.items() if name.endswith(("intermediate/dense/MatMul",
                                                               "output/dense/MatMul"))
           and "attention" not in name]
    assert len(ffn) == 4
    assert all(op.intensity > ridge and op.bound == "compute" for op in ffn)
    # M = seq: 2 * 128 * 64 * 256 FLOPs, not the 2 * 64 * 256 a dim counted as 1 gives
    assert all(op.flops == 2 * 128 * 64 * 256 for op in ffn)
    elementwise = [op for op in cost.ops if op.op_type in ("Add", "Mul", "Div", "Erf", "Sqrt")
                   and op.flops > 0]
    assert elementwise and all(op.intensity < ridge for op in elementwise)
    attention_out = by_name["/bert/encoder/layer.0/attention/output/dense/MatMul"]
    assert attention_out.flops == 2 * 128 * 64 * 64


def test_an_op_whose_size_nobody_can_know_is_marked():
    b = Builder()
    x = b.input("x", ("batch", 16))
    k = b.input("k", (1,), I64)
    top = b.node("TopK", [x, k], ("batch", "unk__0"))   # k is known only at run time
    top.outputs[0].shape = ("batch", "unk__0")
    graph = b.outputs(b.op("Relu", [top.outputs[0]], ("batch", "unk__0")))
    cost = graph_cost(graph, "asic32", {"batch": 2})
    relu = next(op for op in cost.ops if op.op_type == "Relu")
    assert relu.assumed_dims == ("unk__0",)
    assert relu.bytes == 2 * (2 * 1 * 4)     # the unknown dim counted as 1, and said
    assert cost.ops_with_assumed_dims >= 1 and "could not name" in cost.notes[0]


@pytest.mark.parametrize("name", ["gpt2_tiny", "mobilenet_tiny", "bert_tiny_dynamo"])
def test_every_sample_is_fully_sized_at_its_manifest_sizes(name):
    from graphlab.samples import size_hints

    graph = load_sample(name)
    sizes = choose_sizes(graph, hints=size_hints(name))
    assert sizes.bindings == size_hints(name)
    assert graph_cost(graph, "asic32", sizes.bindings).ops_with_assumed_dims > 0   # as read
    priced = sized(graph, sizes.bindings)
    assert graph_cost(priced, "asic32", sizes.bindings).ops_with_assumed_dims == 0


def test_sizes_the_model_fixes_inside_win_over_names_and_hints():
    import sized_models
    from compiler_core.ir import load_model

    def loaded(proto):
        return load_model(proto.SerializeToString())

    chosen = sizes_of(loaded(sized_models.seq_first_heads()), hints={"seq": 64})
    assert chosen["seq"][0] == 5
    assert chosen["seq"][1].startswith("the model's structure: fixed by node 'split_heads'")
    assert chosen["batch"] == (1, "a batch-like name: one example")
    cache = sizes_of(loaded(sized_models.kv_cache()))
    assert cache["past"][0] == cache["seq"][0] == SEQUENCE_LENGTH    # 'past' is a sequence
    assert cache["total"][0] == 2 * SEQUENCE_LENGTH                  # and the mask covers both
    written = sizes_of(loaded(sized_models.expression_dim()), given={"past": 10})
    assert written["past + 1"] == (11, "written as past + 1")
