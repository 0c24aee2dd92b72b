"""The Python API a notebook uses: `import graphlab` stays cheap, `graphlab.compile` keeps the
CLI's --json records, `graphlab.diff` reads any kind of model, `show` says where it can draw."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import onnx
import pytest

import graphlab
from compiler_core.errors import GraphLabError
from compiler_core.ir import load_model, to_bytes
from graphlab.cli import main
from graphlab.notebook.display import inline_report, live_output, report_output
from graphlab.samples import resolve_model


def cli_json(capsys, argv: list[str]) -> dict:
    assert main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def without_timings(record):
    if isinstance(record, dict):
        return {k: without_timings(v) for k, v in record.items() if k not in ("seconds", "cpu_seconds")}
    if isinstance(record, list):
        return [without_timings(v) for v in record]
    return record


def test_importing_graphlab_loads_neither_the_api_nor_the_compiler():
    loaded = subprocess.run(
        [sys.executable, "-c", "import graphlab, sys; print(sorted(m for m in ("
                               "'graphlab.notebook', 'compiler_core', 'dash', 'onnx') "
                               "if m in sys.modules))"],
        capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"
    assert {"compile", "diff", "show", "CompileResult"} <= set(dir(graphlab))


def test_compile_keeps_the_records_the_cli_prints(capsys):
    result = graphlab.compile("cnn_bn", pipeline="O2", bindings="batch=2")
    record = result.to_dict()
    assert without_timings(record["compile"]) == without_timings(
        cli_json(capsys, ["compile", "cnn_bn", "--bind", "batch=2"]))
    assert record["roofline"] == cli_json(capsys, ["roofline", "cnn_bn", "-p", "O2",
                                                   "--bind", "batch=2"])
    assert record["memory"] == cli_json(capsys, ["memory", "cnn_bn", "-p", "O2",
                                                 "--bind", "batch=2"])
    assert record["patterns"] == cli_json(capsys, ["explain", "cnn_bn", "--bind",
                                                   "batch=2"])["patterns"]
    assert result.diffs == [s.diff for s in result.snapshots]
    assert result.roofline.before.total_est_seconds > result.roofline.after.total_est_seconds


def test_records_read_well(capsys):
    result = graphlab.compile("cnn_bn", bindings={"batch": 1})
    text = repr(result)
    assert text.startswith(f"<CompileResult cnn_bn, pipeline O2: {len(result.initial)} -> "
                           f"{len(result.final)} nodes")
    assert "fold_batchnorm" in text
    folded = result.snapshot("fold_batchnorm")
    assert repr(folded).startswith(f"<Snapshot {folded.index + 1} fold_batchnorm: "
                                   f"{folded.nodes_before} -> {folded.nodes_after} nodes (-")
    assert repr(result.roofline).startswith("<CostComparison on asic32: estimated")
    assert repr(result.memory).startswith("<MemoryPlan: arena peak")
    assert "graphlab.FusedConv" in {n.qualified_op for n in result.final.nodes}
    schedule = result.schedule(next(n.name for n in result.final.nodes
                                    if n.op_type == "FusedConv"), array="8x8")
    assert schedule["array"] == "8x8" and schedule["cycles"] > 0
    with pytest.raises(GraphLabError, match="the pipeline has no pass 'fuse_nothing'"):
        result.snapshot("fuse_nothing")


def test_diff_reads_every_kind_of_model():
    path = resolve_model("cnn_bn")
    proto = onnx.load(path)
    graph = load_model(path)
    for other in (path, "cnn_bn", to_bytes(graph), proto, graph):
        assert graphlab.diff("cnn_bn", other).identical
    compiled = graphlab.compile("cnn_bn")
    against_output = graphlab.diff("cnn_bn", compiled)
    assert against_output.b_label == "cnn_bn after O2" and against_output.only_b
    with pytest.raises(GraphLabError, match="cannot read a int as a model"):
        graphlab.diff("cnn_bn", 3)


def test_show_says_where_it_can_draw_and_the_report_fits_in_a_cell():
    with pytest.raises(GraphLabError, match="draws inside a Jupyter notebook"):
        graphlab.show("cnn_bn")
    html = inline_report(graphlab.compile("cnn_bn"), height=500).data
    assert html.startswith('<div><iframe class="graphlab-report" srcdoc="&lt;!DOCTYPE html&gt;')
    assert "height: 500px" in html and "fold_batchnorm" in html


def test_the_live_output_shows_the_report_until_its_own_server_answers():
    """What show() puts in the cell: the report, visible without scripts or a server, and a
    script that brings the live app in front only when the server of this output (its token)
    answers; each state's caption says which is shown."""
    output = live_output("http://127.0.0.1:4321/", "t0ken", "<!DOCTYPE html><p>report</p>",
                         height=600)
    page = output["text/html"]
    assert 'data-showing="report"' in page and "the static report" in page
    assert 'srcdoc="&lt;!DOCTYPE html&gt;&lt;p&gt;report&lt;/p&gt;"' in page
    assert 'style="width: 100%; height: 600px; border: 1px solid #d9e2ec"' in page  # shown
    assert not re.search(r"<iframe[^>]* src=", page)    # the live frame only from the script
    assert 'fetch("http://127.0.0.1:4321/_graphlab_show"' in page
    assert 'said.token !== "t0ken"' in page and "the live app, served by" in page
    assert "live app at http://127.0.0.1:4321/" in output["text/plain"]
    alone = report_output("<!DOCTYPE html>", 500, "mode='report'")
    assert "the static report (mode='report')" in alone["text/html"]
    assert "<script" not in alone["text/html"]
