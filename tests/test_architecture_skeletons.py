"""The skeletons docs/architecture.md gives for a CLI command, a target, an app panel and a
record, read out of the page and put where the page says they go, then used as a person would:
a skeleton that stops working fails here."""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path

import pytest

from compiler_core.hardware.targets import TARGETS_DIR
from compiler_core.ir import load_model
from compiler_core.ir.summary import op_histogram
from compiler_core.records import to_json
from graphlab import cli
from graphlab.samples import resolve_model

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)


def section(title: str) -> str:
    """The text of `## title`, up to the next heading of its level."""
    start = PAGE.index(f"\n## {title}\n")
    end = PAGE.find("\n## ", start + 1)
    return PAGE[start:end if end >= 0 else len(PAGE)]


def block(title: str, language: str) -> str:
    """The first code block of that language in the section."""
    return next(code for lang, code in BLOCK.findall(section(title)) if lang == language)


def skeleton_module(title: str) -> types.ModuleType:
    """The section's Python skeleton run as the module its first line names (relative imports
    resolve in the package it says it goes in)."""
    code = block(title, "python")
    path = code.splitlines()[0].removeprefix("# ").strip()
    assert (ROOT / path).parent.is_dir(), f"the page puts {path} in a folder that is not there"
    package, _, name = path.removesuffix(".py").replace("/", ".").rpartition(".")
    module = types.ModuleType(f"{package}.{name}")
    module.__package__ = package
    exec(compile(code, f"docs/architecture.md ({path})", "exec", dont_inherit=True),
         module.__dict__)
    return module


# ------------------------------------------------------------------------------- CLI command
def test_the_command_skeleton_runs_as_a_command_in_the_list(monkeypatch, capsys):
    ops = skeleton_module("Adding a CLI command")
    monkeypatch.setitem(sys.modules, ops.__name__, ops)
    monkeypatch.setattr(cli, "COMMANDS", [*cli.COMMANDS, "ops"])
    assert cli.main(["ops", "teach_conv_bn", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    expected = op_histogram(load_model(resolve_model("teach_conv_bn")))
    assert record == {"model": "teach_conv_bn", "ops": expected}
    assert cli.main(["ops", "bert_tiny_op13"]) == 0
    lines = capsys.readouterr().out.splitlines()
    counts = op_histogram(load_model(resolve_model("bert_tiny_op13")))
    assert [line.split() for line in lines] == [[str(n), op] for op, n in counts.items()]


def test_every_command_module_is_in_the_list_the_page_names():
    assert "`COMMANDS` in `graphlab/cli.py`" in section("Adding a CLI command")
    modules = {path.stem for path in (ROOT / "graphlab" / "commands").glob("*.py")
               if "\ndef add_parser(" in path.read_text(encoding="utf-8")}
    assert modules == set(cli.COMMANDS)


# ----------------------------------------------------------------------------------- target
@pytest.fixture
def target_file(tmp_path) -> Path:
    data = json.loads(block("Adding a target", "json"))
    path = tmp_path / f"{data['name']}.json"
    path.write_text(json.dumps(data))
    return path


def test_the_target_skeleton_is_a_valid_target_whose_ridge_follows_from_its_figures(
        target_file, capsys):
    data = json.loads(target_file.read_text())
    assert cli.main(["targets", "--check", str(target_file), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["name"] == data["name"] and record["array"] == "64x64"
    assert record["ridge_point"] == {dtype: peak / data["bandwidth_bytes_per_s"]
                                     for dtype, peak in data["peak_ops_per_s"].items()}
    assert cli.main(["targets", "--check", str(target_file)]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"{data['name']}  {data['display_name']}")
    assert "name the file" not in text   # its file is named after it, as a built-in must be


def test_the_target_skeleton_prices_a_model(target_file, capsys):
    assert cli.main(["roofline", "teach_conv_bn", "--target", str(target_file), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    data = json.loads(target_file.read_text())
    assert record["target"]["name"] == "my_npu"
    assert record["target"]["bandwidth_bytes_per_s"] == data["bandwidth_bytes_per_s"]
    assert record["total_flops"] > 0


def test_a_target_file_with_a_field_missing_is_named_by_the_check(target_file, capsys):
    data = json.loads(target_file.read_text())
    del data["clock_hz"]
    target_file.write_text(json.dumps(data))
    assert cli.main(["targets", "--check", str(target_file)]) == 2
    error = capsys.readouterr().err
    assert "field 'clock_hz' is missing" in error and "Hz" in error


def test_a_target_file_named_apart_from_its_name_is_told_how_built_ins_are_found(
        target_file, tmp_path, capsys):
    other = tmp_path / "npu_v2.json"
    other.write_text(target_file.read_text())
    assert cli.main(["targets", "--check", str(other)]) == 0
    assert "name the file my_npu.json" in capsys.readouterr().out


def test_the_built_in_folder_the_page_names_is_where_targets_are_read():
    assert "`compiler_core/hardware/targets/`" in section("Adding a target")
    assert TARGETS_DIR.parts[-3:] == ("compiler_core", "hardware", "targets")
    assert sorted(p.name for p in TARGETS_DIR.glob("*.json")) == sorted(
        p.name for p in (ROOT / "compiler_core" / "hardware" / "targets").glob("*.json"))


# ------------------------------------------------------------------------------------ panel
def test_the_panel_skeleton_is_a_tab_that_draws_the_selected_pass(tmp_path, monkeypatch):
    from dash import dcc

    from callback_requests import post_callback
    from graphlab.app import AppConfig, create_app, ids
    from graphlab.app.panels import registry
    from graphlab.app.view_state import ViewState

    summary = skeleton_module("Adding a panel to the app")
    monkeypatch.setattr(registry, "PANELS", (*registry.PANELS, summary.PANEL))
    app = create_app(AppConfig(cache_dir=str(tmp_path)))
    tabs = [c for c in _components(app.layout) if isinstance(c, dcc.Tabs)
            and getattr(c, "id", None) == ids.TABS][0]
    assert ("Summary", "summary") in [(t.label, t.value) for t in tabs.children]

    view = to_json(ViewState(model="cnn_bn", panel="summary"))
    answer = post_callback(app, f"..{summary.BODY}.children..",
                           {("view-state", "data"): view, (ids.tab_view("summary"), "data"): view},
                           "view-state.data")
    text = answer[summary.BODY]["children"]
    before, after = map(int, re.fullmatch(r"(\d+) → (\d+) nodes", text).groups())
    # the view opens on the first pass that changed the graph: what it got is the model
    assert before == len(load_model(resolve_model("cnn_bn"))) and after < before


def _components(node):
    yield node
    children = getattr(node, "children", None)
    for child in children if isinstance(children, (list, tuple)) else [children]:
        if child is not None and hasattr(child, "to_plotly_json"):
            yield from _components(child)


# ----------------------------------------------------------------------------------- record
def test_the_record_example_writes_what_it_says():
    namespace: dict = {"__name__": "architecture_record_example"}
    exec(compile(block("Records as JSON", "python"), "docs/architecture.md (record)", "exec",
                 dont_inherit=True),
         namespace)   # the block asserts its own output
    run = namespace["Run"]("cse", 1.23456, "kept out", (5, 5))
    assert to_json(run) == {"pass": "cse", "seconds": 1.235, "nodes": [5, 5], "changed": False}
