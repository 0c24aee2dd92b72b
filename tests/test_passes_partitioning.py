"""Heterogeneous partitioning: maximal acyclic accelerator regions, CPU fallback with reasons,
the transfer-cost rule, and the target-file fields it reads."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from onnx import helper

from compiler_core.hardware.targets import TargetError, get_target, target_from_dict
from compiler_core.passes import PassManager, resolve_pipeline
from compiler_core.passes.partitioning.partition import PARTITION_OP
from compiler_core.passes.framework.rewrite import creates_cycle
from compiler_core.records import to_json
from graphlab.cli import main
from passes_helpers import SAMPLE_BINDINGS, build, load_sample, run_checked, snapshot, tensor


def partitions(graph):
    return graph.nodes_of_type(PARTITION_OP, "graphlab")


def body_ops(node):
    return [inner.op_type for inner in node.body.nodes]


def declines_by_op(step, graph_before):
    """{op type: [reasons]} of the nodes the pass left on the CPU."""
    names = {n.name: n.op_type for n in graph_before.nodes}
    found: dict[str, list[str]] = {}
    for decline in step.declined:
        found.setdefault(names.get(decline.site, "?"), []).append(decline.reason)
    return found


@pytest.fixture
def universal_target(tmp_path):
    """A chip that runs every op in float32 (no supported_ops list, no host to weigh)."""
    data = to_json(get_target("asic32"))
    del data["supported_ops"], data["host"]
    data["name"] = "universal"
    path = tmp_path / "universal.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_o2_partition_is_o2_then_partition():
    assert resolve_pipeline("O2-partition") == resolve_pipeline("O2") + ["partition"]


@pytest.mark.parametrize("target", ["universal", "asic32"])
def test_cnn_bn_trunk_is_one_partition(target, universal_target):
    graph = load_sample("cnn_bn")
    chosen = universal_target if target == "universal" else target
    result = PassManager("O2-partition", bindings=SAMPLE_BINDINGS["cnn_bn"], verify=True,
                         check=True, target=chosen).run(graph)
    final = result.final
    assert result.snapshots[-1].verify.ok and result.snapshots[-1].verify.rtol == 1e-4
    (partition,) = partitions(final)
    assert body_ops(partition).count("FusedConv") == 3
    assert len(final) == 1 and not snapshot(result, "partition").declined
    # what crosses the cut: the image in, both heads' logits out (float32)
    crossing = 4 * (1 * 3 * 32 * 32 + 2 * 10)
    assert f"{crossing:,} bytes cross the cuts" in snapshot(result, "partition").notes[0]


def test_bert_softmax_and_erf_stay_on_the_cpu_with_reasons():
    bindings = SAMPLE_BINDINGS["bert_tiny_op13"]
    result = run_checked(load_sample("bert_tiny_op13"), "O2-partition", bindings)
    step = snapshot(result, "partition")
    before = result.graph_before(step.index)
    reasons = {d.site.rsplit("/", 1)[-1]: d.reason for d in step.declined}
    softmax = [r for site, r in reasons.items() if site == "Softmax"]
    assert softmax == ["stays on the CPU: Softmax not supported on asic32"]
    gelu = [d.reason for d in step.declined if d.site.endswith("/Gelu")]
    assert len(gelu) == 2 and all("Erf" in r for r in gelu)
    assert "Gather not supported on asic32" in reasons["Gather"]
    assert "bool tensor" in reasons["Flatten"]
    # the fused Attention and MatMul+GELU nodes were opened so their MatMuls could go
    assert "2 Attention" in " ".join(step.notes)
    offloaded = [op for p in partitions(result.final) for op in body_ops(p)]
    assert offloaded.count("MatMul") >= 8 and "Softmax" not in offloaded
    on_cpu = {n.op_type for n in result.final.nodes if n.op_type != PARTITION_OP}
    assert {"Softmax", "Gelu", "Gather"} <= on_cpu
    assert len(before) < len(result.final) + sum(len(p.body) for p in partitions(result.final))


def test_unfused_bert_keeps_erf_on_the_cpu():
    result = run_checked(load_sample("bert_tiny_op13"), ["O1", "partition"],
                         SAMPLE_BINDINGS["bert_tiny_op13"])
    step = snapshot(result, "partition")
    by_op = declines_by_op(step, result.graph_before(step.index))
    assert by_op["Erf"] == ["stays on the CPU: Erf not supported on asic32"] * 2
    assert all("Softmax not supported" in r for r in by_op["Softmax"])


def test_every_node_is_in_a_partition_or_says_why_not():
    result = run_checked(load_sample("bert_tiny_op13"), "O2-partition",
                         SAMPLE_BINDINGS["bert_tiny_op13"])
    step = snapshot(result, "partition")
    declined = {d.site for d in step.declined}
    for node in result.final.nodes:
        if node.op_type != PARTITION_OP:
            assert node.name in declined, node.name


def test_partitions_are_maximal_and_acyclic():
    result = run_checked(load_sample("bert_tiny_op13"), ["O1", "partition"],
                         SAMPLE_BINDINGS["bert_tiny_op13"])
    final = result.final
    final.check()  # acyclic, consistent
    found = partitions(final)
    assert len(found) > 1
    for a in found:
        for b in found:
            linked = any(user is b for v in a.outputs for user, _ in v.uses)
            if linked:  # two neighbouring partitions could only be one by making a cycle
                assert creates_cycle(final, [a, b])


def test_a_lone_cheap_op_between_cpu_ops_is_not_worth_offloading():
    weight = np.ones((256, 256), np.float32)
    graph = build([helper.make_node("Softmax", ["x"], ["s"]),
                   helper.make_node("Add", ["s", "s"], ["a"]),
                   helper.make_node("Softmax", ["a"], ["t"]),
                   helper.make_node("MatMul", ["t", "w"], ["m"]),
                   helper.make_node("Softmax", ["m"], ["y"])],
                  [tensor("x", shape=[64, 256])], [tensor("y", shape=[64, 256])], {"w": weight})
    result = run_checked(graph, ["partition"])
    step = result.snapshots[0]
    reasons = {d.site: d.reason for d in step.declined}
    assert "not worth offloading" in reasons["Add_1"] and "CPU" in reasons["Add_1"]
    (partition,) = partitions(result.final)
    assert body_ops(partition) == ["MatMul"]
    assert step.rewrites == 1


def test_an_int8_only_npu_keeps_a_float_model_on_the_cpu():
    result = PassManager("O2-partition", bindings=SAMPLE_BINDINGS["cnn_bn"],
                         target="ethos_u55_256").run(load_sample("cnn_bn"))
    step = snapshot(result, "partition")
    assert not partitions(result.final) and not step.changed
    assert all("float32 tensor" in d.reason and "int8" in d.reason for d in step.declined)


def test_dynamic_shapes_stay_on_the_cpu(universal_target):
    result = PassManager(["partition"], target=universal_target).run(load_sample("cnn_bn"))
    step = result.snapshots[0]
    assert not any("Conv" in body_ops(p) for p in partitions(result.final))
    conv_reasons = [d.reason for d in step.declined if d.site.endswith("/Conv")]
    assert len(conv_reasons) == 3
    assert all(r.startswith("stays on the CPU: dynamic shape") for r in conv_reasons)
    assert "(bind batch=...)" in conv_reasons[0]  # names the dim to bind


def test_target_files_may_list_supported_ops_and_a_host():
    asic = get_target("asic32")
    assert {"Conv", "MatMul", "Relu", "Add"} <= asic.supported_ops
    assert not {"Softmax", "Erf", "LayerNormalization", "Shape"} & asic.supported_ops
    assert asic.host.link_bytes_per_s == 31.5e9
    assert asic.host.seconds(768e9, 0) == 1.0 and asic.host.seconds(0, 51.2e9) == 1.0
    u55 = get_target("ethos_u55_256")
    assert "Softmax" in u55.supported_ops and "Erf" not in u55.supported_ops
    assert get_target("tpu_v4").supported_ops is None  # no list: every op
    data = to_json(asic)
    assert target_from_dict(data) == asic


@pytest.mark.parametrize("field, value, message", [
    ("supported_ops", "Conv", "must be a list of op type names"),
    ("supported_ops", ["Conv", 3], "must be a list of op type names"),
    ("host", {"peak_ops_per_s": 1e9}, "must be an object with exactly the keys"),
    ("host", {"peak_ops_per_s": 1e9, "bandwidth_bytes_per_s": -1, "link_bytes_per_s": 1},
     "must be positive"),
])
def test_bad_partitioning_fields_are_named(field, value, message):
    data = to_json(get_target("asic32"))
    data[field] = value
    with pytest.raises(TargetError, match=message):
        target_from_dict(data, "mine.json")


def test_offload_estimate_in_the_notes_adds_up():
    result = PassManager("O2-partition", bindings=SAMPLE_BINDINGS["cnn_bn"]).run(
        load_sample("cnn_bn"))
    note = snapshot(result, "partition").notes[1]
    transfer = float(note.split("bytes ")[-1].split(" us")[0])
    assert math.isclose(transfer, 12_368 / 31.5e9 * 1e6, rel_tol=1e-2)


def test_compile_partitions_for_the_target_it_is_given(capsys):
    argv = ["compile", "cnn_bn", "--pipeline", "O2-partition", "--bind", "batch=1", "--json"]
    assert main(argv + ["--target", "ethos_u55_256"]) == 0
    qualified = f"graphlab.{PARTITION_OP}"
    assert qualified not in json.loads(capsys.readouterr().out)["op_histogram_after"]
    assert main(argv) == 0  # the default target, asic32
    assert json.loads(capsys.readouterr().out)["op_histogram_after"] == {qualified: 1}


def test_a_region_holding_a_horizontally_fused_matmul_keeps_its_dependency_order(
        universal_target):
    """Horizontal fusion gives the fused MatMul and the Split of its result the same order key;
    the partition's body used to be built by order key and read the Split first (KeyError)."""
    nodes = [helper.make_node("MatMul", ["x", "wa"], ["a"]),
             helper.make_node("Add", ["a", "ba"], ["a_b"]),
             helper.make_node("MatMul", ["x", "wb"], ["b"]),
             helper.make_node("Add", ["b", "bb"], ["b_b"]),
             helper.make_node("Add", ["a_b", "b_b"], ["y"])]
    weights = {name: np.full(shape, 0.1 * i, np.float32) for i, (name, shape) in enumerate(
        [("wa", (8, 8)), ("ba", (8,)), ("wb", (8, 8)), ("bb", (8,))])}
    graph = build(nodes, [tensor("x", shape=["batch", 8])], [tensor("y", shape=None)], weights)
    result = PassManager("O2-partition", bindings={"batch": 2}, verify=True, check=True,
                         target=universal_target).run(graph)
    assert result.snapshots[-1].verify.ok
    (partition,) = partitions(result.final)
    assert body_ops(partition)[1:] == ["Split", "Add"]
