"""Weights stay on disk until needed: a model's weights are mapped from its files, read only
by what computes with them, written out without being copied, and the large tensors passes
make are computed lazily or spilled to a scratch file that goes away with them.

The models are small (a tiny Llama-shaped decoder with its float16 weights in an external data
file); the sizes that make this matter are measured by `benchmarks/scale.py`.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import pickle
import tracemalloc

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from benchmarks.constant_weights import write_with_constant_weights
from benchmarks.decoder_models import TINY, build_decoder
from compiler_core.errors import ModelLoadError
from compiler_core.ir import load_model, save_model
from compiler_core.ir.computed_tensors import ConcatenatedTensor, TransposedTensor
from compiler_core.ir.lazy_tensors import (InMemory, MappedFile, StoredTensor,
                                           StoredTensorError, values_of, watch_reads)
from compiler_core.passes import PassManager
from compiler_core.runtime_check import run_isolated
from graphlab.cli import main

PROMPT = np.array([[3, 17, 42, 9, 250, 1, 77, 5]], np.int64)


@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    """A Llama-shaped decoder (2 layers, hidden 64, tied embeddings), weights in model.onnx.data."""
    path = tmp_path_factory.mktemp("decoder") / "model.onnx"
    build_decoder(TINY, path)
    return path


def _stored(graph) -> dict[str, StoredTensor]:
    return {n: v.stored for n, v in graph.initializers.items()
            if isinstance(v.stored, StoredTensor)}


def _logits(model) -> np.ndarray:
    """onnxruntime at its default level, in a child process, as users run a model."""
    outcome = run_isolated(model, [{"input_ids": PROMPT, "attention_mask": np.ones_like(PROMPT)}])
    assert outcome.ok, outcome.describe()
    return outcome.outputs[0]["logits"].astype(np.float32)


def _weights_model(folder, *, external: bool) -> str:
    """y = (w1 + w2) @ (w3 @ x): the Add reads only constants, the MatMul with w3 does not."""
    rng = np.random.default_rng(0)
    weights = {n: rng.standard_normal((32, 32)).astype(np.float32) for n in ("w1", "w2", "w3")}
    nodes = [helper.make_node("Add", ["w1", "w2"], ["t"], name="add"),
             helper.make_node("MatMul", ["w3", "x"], ["u"], name="project"),
             helper.make_node("MatMul", ["t", "u"], ["y"], name="mix")]
    graph = helper.make_graph(
        nodes, "weights", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32, 4])],
        [numpy_helper.from_array(a, n) for n, a in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    path = os.path.join(str(folder), "weights.onnx")
    onnx.save(model, path, save_as_external_data=external, location="weights.onnx.data",
              size_threshold=0)
    return path


# ---- import: mapped, not read --------------------------------------------------------------

def test_external_weights_are_mapped_from_their_file_and_equal_onnxs(decoder):
    graph = load_model(decoder)
    stored = _stored(graph)
    data_file = os.path.realpath(str(decoder) + ".data")
    assert len(stored) == 3 * TINY.layers + 4 * TINY.layers + 1   # norms, projections, embed
    assert {t.source.path for t in stored.values()} == {data_file}
    assert all(isinstance(t.source, MappedFile) for t in stored.values())
    reference = onnx.load(str(decoder))
    for tensor in reference.graph.initializer:
        if tensor.name in stored:
            np.testing.assert_array_equal(graph.initializers[tensor.name].const,
                                          numpy_helper.to_array(tensor))


def test_inline_weights_are_views_of_the_model_file(tmp_path):
    path = _weights_model(tmp_path, external=False)
    graph = load_model(path)
    stored = _stored(graph)
    assert sorted(stored) == ["w1", "w2", "w3"]
    assert {t.source.path for t in stored.values()} == {os.path.realpath(path)}
    array = graph.initializers["w3"].const
    assert not array.flags.owndata and not array.flags.writeable   # a view, not a copy
    expected = {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}
    np.testing.assert_array_equal(array, expected["w3"])


# `explain` is not among them: it judges each pattern on the graph its pass receives, so it
# runs the pipeline and reads what `compile` reads.
@pytest.mark.parametrize("command", [["info"], ["show"], ["roofline"],
                                     ["memory"], ["schedule", "--node",
                                                  "/model/layers.0/self_attn/q_proj/MatMul"]])
def test_commands_that_need_no_values_read_no_weight(decoder, command):
    out = io.StringIO()
    args = [command[0], str(decoder), *command[1:]]
    with watch_reads() as reads, contextlib.redirect_stdout(out):
        assert main(args) == 0
    assert reads == []
    if command[0] == "info":   # the parameter count comes from shapes alone
        structure = onnx.load(str(decoder), load_external_data=False)
        count = sum(int(np.prod(t.dims)) for t in structure.graph.initializer)
        assert count > TINY.parameters() and f"{count:,} parameters" in out.getvalue()


def test_the_workspace_of_the_app_reads_only_what_the_pipeline_needs(decoder, tmp_path):
    from graphlab.app.config import AppConfig
    from graphlab.app.services import Services

    services = Services.from_config(AppConfig(extra_model_path=str(decoder),
                                              cache_dir=str(tmp_path)))
    with watch_reads() as reads:
        workspace = services.workspace(services.default_state, None)
    assert len(workspace.result.final) < len(workspace.result.initial)
    norms = {n for n in _stored(workspace.result.initial) if "norm" in n}
    # deduplicating constants compares the first and last elements of each weight; only the
    # look-alikes (every RMSNorm weight is all ones) are read whole
    assert set(reads) <= set(_stored(workspace.result.initial))
    assert norms <= set(reads)


@pytest.fixture(scope="module")
def constant_decoder(decoder):
    """The same decoder in one file, every weight a Constant node (no initializers)."""
    path = decoder.with_name("constants.onnx")
    write_with_constant_weights(decoder, path)
    return path


def _constant_values(graph) -> dict[str, object]:
    return {n.outputs[0].name: n.attrs["value"] for n in graph.nodes if n.op_type == "Constant"}


def test_constant_node_weights_are_ranges_of_the_model_file(decoder, constant_decoder):
    graph = load_model(constant_decoder)
    weights = {n: v for n, v in _constant_values(graph).items() if isinstance(v, StoredTensor)}
    assert len(weights) == len(_stored(load_model(decoder)))
    assert {t.source.path for t in weights.values()} == {os.path.realpath(constant_decoder)}
    reference = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(decoder)).graph.initializer}
    for name, stored in weights.items():
        array = stored.numpy()
        assert not array.flags.owndata and not array.flags.writeable
        np.testing.assert_array_equal(array, reference[name])
    with watch_reads() as reads, contextlib.redirect_stdout(io.StringIO()):
        assert main(["info", str(constant_decoder)]) == 0
    assert reads == []


def test_loading_constant_node_weights_copies_none_of_them(tmp_path):
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal((512, 512)).astype(np.float32) for _ in range(8)]   # 8 MiB
    nodes = [helper.make_node("Constant", [], [f"w{i}"], value=numpy_helper.from_array(w))
             for i, w in enumerate(weights)]
    nodes += [helper.make_node("Sum", [f"w{i}" for i in range(len(weights))], ["s"]),
              helper.make_node("MatMul", ["x", "s"], ["y"])]
    graph = helper.make_graph(
        nodes, "constants", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 512])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 512])])
    path = tmp_path / "constants.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    tracemalloc.start()
    try:
        loaded = load_model(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < os.path.getsize(path) / 8     # the file is neither copied nor parsed whole
    found = [values_of(loaded.values[f"w{i}"].constant_data()) for i in range(len(weights))]
    for array, expected in zip(found, weights):
        assert not array.flags.owndata
        np.testing.assert_array_equal(array, expected)


def test_constant_node_weights_fold_to_initializers_without_a_copy(decoder, constant_decoder,
                                                                   tmp_path):
    graph = load_model(constant_decoder)
    before = _constant_values(graph)
    final = PassManager("O2").run(graph).final

    def merged(graph) -> int:
        return sum(isinstance(v.stored, ConcatenatedTensor) for v in graph.initializers.values())

    # the weights end as they do when they are initializers: the very stored tensors, or
    # recipes over them (merged Q/K/V, gate/up), not read into memory
    assert merged(final) == merged(PassManager("O2").run(load_model(decoder)).final) > 0
    kept = [v.stored for v in final.initializers.values() if isinstance(v.stored, StoredTensor)]
    assert kept and {id(t) for t in kept} <= {id(t) for t in before.values()}
    saved = save_model(final, tmp_path / "o2.onnx")
    expected, found = _logits(constant_decoder), _logits(saved.path)
    np.testing.assert_allclose(found, expected, atol=2e-3 * np.abs(expected).max())


@pytest.mark.parametrize("external", [False, True])
def test_constant_node_weights_are_written_back_as_constant_nodes(constant_decoder, tmp_path,
                                                                  external):
    graph = load_model(constant_decoder)
    saved = save_model(graph, tmp_path / "again.onnx", external_data=external)
    onnx.checker.check_model(saved.path)
    assert (saved.data_path is not None) == external
    again = load_model(saved.path)
    found = _constant_values(again)
    for name, value in _constant_values(graph).items():
        np.testing.assert_array_equal(np.asarray(values_of(found[name])), values_of(value))
    np.testing.assert_array_equal(_logits(saved.path), _logits(constant_decoder))


# ---- passes: only what they touch ----------------------------------------------------------

def test_folding_reads_only_the_weights_it_folds(tmp_path):
    graph = load_model(_weights_model(tmp_path, external=True))
    with watch_reads() as reads:
        result = PassManager("fold_constants").run(graph)
    assert sorted(reads) == ["w1", "w2"]
    folded = result.final.initializers["t"].const
    np.testing.assert_array_equal(folded, graph.initializers["w1"].const
                                  + graph.initializers["w2"].const)


def test_a_large_computed_weight_is_spilled_and_its_file_goes_with_it(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHLAB_SPILL_BYTES", "1024")
    graph = load_model(_weights_model(tmp_path, external=True))
    expected = graph.initializers["w1"].const + graph.initializers["w2"].const
    result = PassManager("fold_constants").run(graph)
    spilled = result.final.initializers["t"].stored
    assert isinstance(spilled, StoredTensor) and spilled.source.path.endswith(".tensor")
    path = spilled.source.path
    assert os.path.getsize(path) == expected.nbytes
    np.testing.assert_array_equal(spilled.numpy(), expected)
    saved = save_model(result.final, tmp_path / "folded.onnx")
    np.testing.assert_array_equal(load_model(saved.path).initializers["t"].const, expected)
    del result, spilled, graph
    gc.collect()
    assert not os.path.exists(path)


def test_merged_and_transposed_weights_are_recipes_written_straight_from_the_file(
        decoder, tmp_path):
    graph = load_model(decoder)
    with watch_reads() as reads:
        PassManager(["cancel_transposes", "fuse_sibling_matmuls"]).run(graph)
    assert reads == []
    final = PassManager("O2").run(graph).final
    computed = [v.stored for v in final.initializers.values()
                if isinstance(v.stored, (ConcatenatedTensor, TransposedTensor))]
    kinds = sorted(type(t).__name__ for t in computed)
    assert kinds == ["ConcatenatedTensor"] * (2 * TINY.layers) + ["TransposedTensor"]
    saved = save_model(final, tmp_path / "o2.onnx", external_data=True)
    assert saved.data_path is not None
    expected, found = _logits(decoder), _logits(tmp_path / "o2.onnx")
    np.testing.assert_allclose(found, expected, atol=2e-3 * np.abs(expected).max())


# ---- export and pickling -------------------------------------------------------------------

@pytest.mark.parametrize("external", [False, True])
def test_mapped_weights_export_unchanged(decoder, tmp_path, external):
    graph = load_model(decoder)
    saved = save_model(graph, tmp_path / "again.onnx", external_data=external)
    again = load_model(saved.path)
    for name, value in graph.initializers.items():
        np.testing.assert_array_equal(again.initializers[name].const, value.const)
    np.testing.assert_array_equal(_logits(saved.path), _logits(decoder))


def test_a_pickled_graph_maps_the_same_file_and_refuses_a_changed_one(tmp_path):
    path = _weights_model(tmp_path, external=True)
    graph = load_model(path)
    copy = pickle.loads(pickle.dumps(graph))
    np.testing.assert_array_equal(copy.initializers["w2"].const, graph.initializers["w2"].const)
    data = pickle.dumps(graph)
    os.replace(path + ".data", path + ".old")   # the model re-exported in its place
    with open(path + ".data", "wb") as handle:
        handle.write(os.urandom(3 * 32 * 32 * 4))
    with pytest.raises(StoredTensorError, match="changed on disk"):
        pickle.loads(data)


# ---- safety --------------------------------------------------------------------------------

def test_external_data_through_a_link_out_of_the_model_folder_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.bin").write_bytes(bytes(8))
    folder = tmp_path / "model"
    folder.mkdir()
    os.symlink(outside / "secret.bin", folder / "weights.bin")
    weight = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2],
                         data_location=TensorProto.EXTERNAL)
    weight.external_data.add(key="location", value="weights.bin")
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], [weight]))
    onnx.save(model, str(folder / "m.onnx"))
    with pytest.raises(ModelLoadError, match="outside the model's directory"):
        load_model(folder / "m.onnx")


def test_the_app_keeps_spilled_tensors_for_its_store_and_rebuilds_when_they_are_gone(
        tmp_path, monkeypatch):
    from collections import OrderedDict

    from graphlab.app import builds, held_workspaces
    from graphlab.app.build_launchers import LocalLauncher
    from graphlab.app.shared_storage import SharedStorage

    monkeypatch.setenv("GRAPHLAB_SPILL_BYTES", "1024")
    model = _weights_model(tmp_path, external=True)
    store = builds.Builds(SharedStorage(str(tmp_path / "cache")), 3600,
                          launcher=LocalLauncher())
    job = builds.BuildJob("folded", "weights.onnx",
                          lambda progress: PassManager("fold_constants").run(load_model(model)))
    built = store.get(job)
    spilled = built.final.initializers["t"].stored.source.path
    assert os.path.dirname(spilled) == store.tensors   # where every server process finds it
    monkeypatch.setattr(held_workspaces, "_held", OrderedDict())   # another server process
    np.testing.assert_array_equal(store.ready("folded").final.initializers["t"].const,
                                  built.final.initializers["t"].const)
    del built
    gc.collect()
    assert os.path.exists(spilled)   # the store still needs it
    os.unlink(spilled)               # cleaned away (older than the store keeps anything)
    monkeypatch.setattr(held_workspaces, "_held", OrderedDict())
    assert store.ready("folded") is None and "folded" not in store.store


def test_a_self_contained_pickle_carries_the_weights_to_a_machine_without_the_file(tmp_path):
    from compiler_core.ir.lazy_tensors import self_contained_pickles

    model = _weights_model(tmp_path, external=True)
    graph = load_model(model)
    expected = np.array(graph.initializers["w1"].const)
    by_path = pickle.dumps(graph)
    with self_contained_pickles():
        carried = pickle.dumps(graph)
    os.rename(model + ".data", model + ".moved")   # the reader's machine has not got the file
    with pytest.raises(FileNotFoundError):
        pickle.loads(by_path)
    np.testing.assert_array_equal(pickle.loads(carried).initializers["w1"].const, expected)


def test_a_tied_embedding_past_the_folding_limit_is_not_stored_twice(decoder):
    from compiler_core.passes.framework.base import PassContext
    from compiler_core.passes.framework.pass_registry import get_pass

    graph = load_model(decoder)
    embedding = graph.initializers["model.embed_tokens.weight"]
    count = len(graph.initializers)
    result = get_pass("cancel_transposes").run(
        graph, PassContext(fold_size_limit=embedding.stored.nbytes - 1))
    assert len(graph.initializers) == count and graph.node_by_name("/lm_head/Transpose")
    [decline] = [d for d in result.declined if d.rule == "transposed_weight"]
    assert "also read by /model/embed_tokens/Gather" in decline.reason
    result = get_pass("cancel_transposes").run(graph, PassContext())   # 32 KiB: folded
    assert graph.node_by_name("/lm_head/Transpose") is None and not result.declined


def test_a_diff_tells_mapped_weights_apart_by_content(tmp_path):
    """Each read of a mapped weight is a fresh array: the diff must not take one weight's
    digest for another's."""
    from compiler_core.model_diff import diff_models

    def chain(name: str, changed: int | None) -> str:
        rng = np.random.default_rng(1)
        weights = [rng.standard_normal((32, 32)).astype(np.float32) for _ in range(6)]
        if changed is not None:
            weights[changed][0, 0] += 1.0
        nodes = [helper.make_node("MatMul", [f"h{i}", f"w{i}"], [f"h{i + 1}"], name=f"mm{i}")
                 for i in range(6)]
        graph = helper.make_graph(
            nodes, "chain", [helper.make_tensor_value_info("h0", TensorProto.FLOAT, [4, 32])],
            [helper.make_tensor_value_info("h6", TensorProto.FLOAT, [4, 32])],
            [numpy_helper.from_array(w, f"w{i}") for i, w in enumerate(weights)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 10
        path = str(tmp_path / f"{name}.onnx")
        onnx.save(model, path, save_as_external_data=True, location=f"{name}.data",
                  size_threshold=0)
        return path

    a, b = load_model(chain("a", None)), load_model(chain("b", 3))
    assert len(_stored(a)) == 6
    diff = diff_models(a, b)
    assert [p.a.name for p in diff.changed_pairs] == ["mm3"]
    assert diff.kinds() == {"weights": 1}
    assert diff_models(a, load_model(chain("c", None))).summary()["changed"] == 0


@pytest.mark.parametrize("sample", ["llama_tiny_dynamo", "llama_tiny_torchscript"])
def test_a_real_export_with_external_weights_compiles_from_its_mapped_file(sample, tmp_path):
    """A PyTorch export (not the decoder builder's) saved the way large exports are, its
    weights in a data file: mapped at import, and O2's output runs like it in onnxruntime."""
    from graphlab.samples import resolve_model

    path = tmp_path / "model.onnx"
    onnx.save(onnx.load(resolve_model(sample)), str(path), save_as_external_data=True,
              location="model.onnx.data", size_threshold=1024)
    graph = load_model(path)
    data_file = os.path.realpath(str(path) + ".data")
    assert len(_stored(graph)) >= 10
    assert {t.source.path for t in _stored(graph).values()} == {data_file}
    out = tmp_path / "o2.onnx"
    assert main(["compile", str(path), "-p", "O2", "-o", str(out), "--external-data"]) == 0
    compiled = load_model(out)
    assert len(compiled.nodes) < len(graph.nodes) / 2
    assert any(n.op_type == "Attention" for n in compiled.nodes)
    np.testing.assert_allclose(_logits(str(out)), _logits(str(path)), atol=1e-4)


@pytest.mark.parametrize("array", [np.arange(300, dtype=np.float32).reshape(20, 15),
                                   np.arange(10, dtype=np.float16), np.zeros((0, 4), np.int64),
                                   np.array(2.5, np.float64), np.array([True, False, True])],
                         ids=["float32", "float16-short", "empty", "scalar", "bool"])
def test_a_stored_weights_cse_fingerprint_is_its_arrays(array):
    """CSE reads a stored weight's fingerprint from its bytes (``end_bytes``): the same key as
    the array's, ends shorter than the sample included, and the read is noted like one."""
    from compiler_core.passes.cleanup import cse

    data = numpy_helper.from_array(array).raw_data
    stored = StoredTensor("w", helper.np_dtype_to_tensor_dtype(array.dtype), array.shape,
                          InMemory(b"\0" * 8 + data), 8, len(data))
    with watch_reads() as read:
        assert cse._fingerprint(stored) == cse._fingerprint(array)
    assert read == ["w"]
