"""Rules are the unit: every registered pass's patterns known by name whatever was imported
first, each rule with its pattern in its rule set's module, the lowering reading the same
rule objects."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from compiler_core.lowering import attention_block
from compiler_core.passes import PRESETS, all_passes, get_pass
from compiler_core.passes.framework.rules import RewritePass

ROOT = Path(__file__).resolve().parents[1]
# What a fresh process imports before it asks for the patterns.
FIRST_IMPORTS = {"the rulebook": "", "the pattern language": "import compiler_core.patterns",
                 "the passes": "import compiler_core.passes",
                 "the onnxruntime lowering": "import compiler_core.lowering.attention_block"}
LISTING = ("import json\nfrom compiler_core.passes.framework.rulebook import registered_patterns\n"
           "print(json.dumps(list(registered_patterns())))")


def _child(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


@functools.cache
def listed_after(first: str) -> list[str]:
    """The pattern names a fresh process lists after importing ``first``."""
    run = _child(f"{first}\n{LISTING}")
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_the_patterns_are_the_same_whatever_was_imported_first():
    lists = {what: listed_after(first) for what, first in FIRST_IMPORTS.items()}
    first = lists["the rulebook"]
    assert all(names == first for names in lists.values()), lists
    # the three that only registered once their pass module was imported are there
    assert {"rmsnorm", "skip_rmsnorm", "rotary_embedding", "attention", "conv_bn"} <= set(first)


def test_explain_names_the_same_patterns_in_a_fresh_process():
    run = _child("import sys\nfrom graphlab.cli import main\n"
                 "sys.exit(main(['explain', 'teach_gelu', '--pattern', 'no_such_pattern']))")
    assert run.returncode == 2
    known = run.stderr.split("known patterns: ", 1)[1].strip().rstrip(")").split(", ")
    assert known == listed_after("")


def _rule_passes() -> list[RewritePass]:
    return [p for p in map(get_pass, all_passes()) if isinstance(p, RewritePass)
            and p.name in {n for names in PRESETS.values() for n in names}]


@pytest.mark.parametrize("rule_pass", _rule_passes(), ids=lambda p: p.name)
def test_a_fusion_is_one_module_and_a_preset_line(rule_pass):
    """Each built-in rule set's rules (and so their patterns) are written in one module, or
    one package, of the pass's family; the pass is in a preset."""
    modules = {type(rule).pattern.__module__ for rule in rule_pass.rules}
    modules |= {type(rule).__module__ for rule in rule_pass.rules}
    family = f"compiler_core.passes.{rule_pass.family}."
    assert all(m.startswith(family) for m in modules), modules
    homes = {m[len(family):].split(".")[0] for m in modules}
    assert len(homes) == 1, modules
    assert any(rule_pass.name in names for names in PRESETS.values())


def test_the_lowering_matches_with_the_attention_rule_itself():
    [rule] = get_pass("fuse_attention").rules
    assert attention_block.ATTENTION is rule
    assert rule.named_pattern().title == "attention" == rule.pattern().title
