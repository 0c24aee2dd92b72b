"""The rule and pass skeletons of docs/architecture.md run as written: loaded as plugins in
a fresh process, they compile a small model whose result onnxruntime checks."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import onnx
from onnx import TensorProto, helper

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"


def skeleton(kind: str) -> str:
    """The code block of the page that starts with ``# skeleton: <kind>``."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    [code] = [b for b in blocks if b.startswith(f"# skeleton: {kind} ")]
    return code


def mul_add_double_neg(path: Path) -> None:
    """relu(-(-(x·y + z))): one Mul + Add to fuse, one Neg pair to remove."""
    nodes = [helper.make_node("Mul", ["x", "y"], ["m"], name="mul"),
             helper.make_node("Add", ["m", "z"], ["a"], name="add"),
             helper.make_node("Neg", ["a"], ["n1"], name="neg1"),
             helper.make_node("Neg", ["n1"], ["n2"], name="neg2"),
             helper.make_node("Relu", ["n2"], ["out"], name="relu")]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in "xyz"]
    outputs = [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 3])]
    model = helper.make_model(helper.make_graph(nodes, "skeletons", inputs, outputs),
                              opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    onnx.save(model, str(path))


def test_the_rule_and_pass_skeletons_compile_a_model(tmp_path):
    rule, pass_ = tmp_path / "mul_add.py", tmp_path / "double_neg.py"
    rule.write_text(skeleton("a rule"))
    pass_.write_text(skeleton("a pass"))
    model = tmp_path / "model.onnx"
    mul_add_double_neg(model)
    run = subprocess.run(
        [sys.executable, "-m", "graphlab", "compile", str(model), "--plugins", str(rule),
         "--plugins", str(pass_), "-p", "eliminate_double_neg,fuse_mul_add,dce", "--verify",
         "--json"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["op_histogram_after"] == {"graphlab.MulAdd": 1, "Relu": 1}
    assert [(p["name"], p["rewrites"]) for p in report["passes"]] == [
        ("eliminate_double_neg", 1), ("fuse_mul_add", 1), ("dce", 0)]
    assert report["verify"]["ok"] and report["runtime_check"]["ok"]
