"""docs/notebook.ipynb runs top to bottom in a real Jupyter kernel (nbclient + ipykernel), and
the pass debugger its last cell opens inline answers — so the lesson cannot rot.  The saved
notebook keeps the self-contained report in that cell's output, for when no kernel runs."""

from __future__ import annotations

import html
import json
import os
import re
import urllib.request

import nbformat
from nbclient import NotebookClient

NOTEBOOK = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs",
                        "notebook.ipynb")


def outputs_text(cell) -> str:
    parts = []
    for output in cell.get("outputs", []):
        parts.append(output.get("text", ""))
        for kind in ("text/plain", "text/html"):
            parts.append(output.get("data", {}).get(kind, ""))
    return "\n".join(parts)


def test_the_notebook_lesson_runs_in_a_kernel_and_its_app_answers(tmp_path):
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    with client.setup_kernel():
        for index, cell in enumerate(notebook.cells):
            client.execute_cell(cell, index)   # a failing cell raises CellExecutionError
        said = [outputs_text(cell) for cell in code]
        page = re.search(r'data-app-url="(http://127\.0\.0\.1:\d+/)"', said[-1])
        assert page, said[-1]
        with urllib.request.urlopen(page.group(1), timeout=30) as answer:   # kernel still up
            assert answer.status == 200
            assert "GraphLab pass debugger" in answer.read().decode()
        token = re.search(r'id="graphlab-show-(\w+)"', said[-1]).group(1)
        with urllib.request.urlopen(page.group(1) + "_graphlab_show", timeout=30) as answer:
            assert json.load(answer) == {"token": token}   # the output's script asks this
            assert answer.headers["Access-Control-Allow-Origin"] == "*"
    saved = tmp_path / "lesson.ipynb"   # the kernel is gone: what a re-opened notebook holds
    nbformat.write(notebook, str(saved))
    shown = nbformat.read(str(saved), as_version=4).cells[-1].outputs
    assert [o.output_type for o in shown] == ["display_data"]
    saved_html = shown[0]["data"]["text/html"]
    assert "the static report" in saved_html and 'data-showing="report"' in saved_html
    assert not re.search(r"<iframe[^>]* src=", saved_html)   # no frame on the kernel's port
    report = html.unescape(re.search(r'srcdoc="([^"]*)"', saved_html).group(1))
    assert report.startswith("<!DOCTYPE html>") and "<title>GraphLab report: bert_tiny_op13" \
        in report
    assert "fuse_attention" in report and "Roofline" in report
    assert not re.search(r"<(script|link|img)[^>]*(src|href)=", report)   # self-contained
    assert "the live app at http://127.0.0.1:" in shown[0]["data"]["text/plain"]
    assert "<CompileResult bert_tiny_op13, pipeline O2" in said[0]
    assert "graphlab.Attention '/bert/encoder/layer.0/attention/self/Attention'" in said[1]
    assert "at bn_shared: Conv output has another consumer (Relu 'relu_side')" in said[2]
    assert "graphlab.Attention" in said[3] and "right of the ridge" in said[3]
    assert "Add" in said[3] and "left of the ridge" in said[3]
    assert re.search(r"\d+ folds, [\d,]+ cycles, utilization \d+%", said[4])
    assert "bert_tiny_op13 (286 nodes) vs bert_tiny_dynamo (120 nodes)" in said[5]
    measured = said[6]   # the seed claims, on the machine the lesson ran on
    assert "<Measurement bert_tiny_op13 on This machine" in measured
    assert re.search(r"Latency at ORT_DISABLE_ALL: [\d.]+ → [\d.]+ ms, [\d.]+×", measured)
    assert re.search(r"Traffic of fuse_attention at ORT_DISABLE_ALL, as onnxruntime's kernels "
                     r"read and wrote it: [\d.]+ MiB → [\d.]+ MiB, \d+% less", measured)
    assert re.search(r"fuse_attention +\d+ nodes +ORT_ENABLE_ALL [\d.]+", measured)
