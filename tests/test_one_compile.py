"""One way to compile: the CLI, the notebook and the app's builds give the same record for the
same model, pipeline, sizes and target, and the app keys a build by what changes its result."""

from __future__ import annotations

import json

import pytest

import graphlab
from compiler_core.compilation import compile_model, result_key
from compiler_core.errors import GraphLabError
from compiler_core.hardware.targets import DEFAULT_TARGET
from compiler_core.records import to_json
from graphlab.app.config import AppConfig
from graphlab.app.services import Services
from graphlab.app.view_state import ViewState
from graphlab.cli import main
from hardware_graphs import load_sample

# (model, pipeline, --bind, --target): no bindings; the user's; a pipeline that partitions
CASES = [("bert_tiny_op13", "O2", "", "asic32"),
         ("bert_tiny_op13", "O2", "seq=64", "asic32"),
         ("cnn_bn", "O2-partition", "", "teach16")]


@pytest.fixture(scope="module")
def services(tmp_path_factory):
    return Services.from_config(AppConfig(cache_dir=str(tmp_path_factory.mktemp("builds"))))


def without_timings(record):
    if isinstance(record, dict):
        return {k: without_timings(v) for k, v in record.items() if k not in ("seconds", "cpu_seconds")}
    if isinstance(record, list):
        return [without_timings(v) for v in record]
    return record


def cli_record(capsys, model: str, pipeline: str, bind: str, target: str) -> dict:
    args = ["compile", model, "-p", pipeline, "--target", target, "--json"]
    assert main(args + (["--bind", bind] if bind else [])) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("model,pipeline,bind,target", CASES)
def test_the_cli_the_notebook_and_the_app_give_one_record(services, capsys, model, pipeline,
                                                          bind, target):
    cli = cli_record(capsys, model, pipeline, bind, target)
    notebook = graphlab.compile(model, pipeline, bind or None, target).to_dict()["compile"]
    app = to_json(services.workspace(ViewState(model=model, pipeline=pipeline, bindings=bind,
                                               target=target), None).compilation.record())
    shared = set(app)
    assert shared <= set(cli) and shared <= set(notebook)
    assert {k: without_timings(cli[k]) for k in shared} == without_timings(app)
    assert {k: without_timings(notebook[k]) for k in shared} == without_timings(app)
    assert len(cli["passes"]) == len(app["passes"]) > 0   # not two empty records


def test_bert_opens_at_the_same_graph_in_the_cli_and_the_app(services, capsys):
    cli = cli_record(capsys, "bert_tiny_op13", "O2", "", "asic32")
    app = services.workspace(ViewState(model="bert_tiny_op13"), None)
    assert cli["nodes_after"] == len(app.result.final)
    assert cli["decided"]["bound"] == app.compilation.decisions.bound == {}
    # both price at the same representative sizes, which the pipeline left symbolic
    assert cli["decided"]["sizes"]["bindings"] == app.sizes.bindings == {
        "batch": 1, "seq": 128}
    assert app.result.final.inputs[0].shape == ("batch", "seq")


def test_partitioning_in_the_app_plans_for_the_target_the_page_shows(services):
    def partitions(target: str):
        ws = services.workspace(ViewState(model="bert_tiny_op13", pipeline="O2-partition",
                                          target=target), None)
        return ws, {n.attrs["target"] for n in ws.result.final.nodes
                    if n.op_type == "AcceleratorPartition"}

    asic, on_asic = partitions("asic32")
    teach, on_teach = partitions("teach16")
    assert on_asic == {"asic32"} and on_teach == {"teach16"}
    assert asic.key != teach.key
    assert teach.compilation.decisions.target == "teach16"
    assert teach.compilation.decisions.target_readers == ("partition",)
    # an accelerator runs fixed sizes only: this pipeline binds every dim, and says which pass
    assert teach.compilation.decisions.bound == {"batch": 1, "seq": 128}
    assert teach.compilation.decisions.fixed_size_readers == ("partition",)


def test_a_pipeline_that_reads_no_target_is_built_once_for_every_target(services):
    jobs = [services.workbench.job(services.workbench.source("cnn_bn"), "O2", {}, target)
            for target in ("asic32", "teach16")]
    assert jobs[0].key == jobs[1].key
    ws = services.workspace(ViewState(model="cnn_bn", target="teach16"), None)
    assert ws.compilation.decisions.target is None   # nothing planned for a chip


def test_the_build_key_is_the_decisions_key():
    graph = load_sample("cnn_bn")
    for pipeline, bindings, target in [("O2", {}, "teach16"), ("O2-partition", {}, "teach16"),
                                       ("O1", {"batch": 3}, None)]:
        compiled = compile_model(graph, pipeline, bindings, target)
        assert compiled.decisions.result_key() == result_key(pipeline, bindings, target)
    assert result_key("O2-partition", {}, None)[2] == DEFAULT_TARGET
    with pytest.raises(GraphLabError, match="nope"):
        result_key("O2", {}, "nope")   # refused before any build starts


def test_compile_says_what_it_decided_for_a_partitioning_pipeline(capsys):
    assert main(["compile", "bert_tiny_op13", "-p", "O2-partition", "--target", "teach16"]) == 0
    text = capsys.readouterr().out
    assert "target    teach16: partition planned for it" in text
    assert ("sizes     batch=1,seq=128 (representative — batch, seq: the sample's usual size): "
            "all bound, partition plans for fixed sizes") in text
    assert "left symbolic" not in text
