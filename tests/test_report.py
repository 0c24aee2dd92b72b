"""`graphlab report`: one self-contained HTML page with the whole story of a pipeline run."""

from __future__ import annotations

import re

import pytest

from compiler_core.passes import resolve_pipeline
from graphlab.cli import main
from graphlab.report.markup import Markup, tag

import bad_models


@pytest.fixture(scope="module")
def conv_bn_page(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("report") / "teach_conv_bn.html"
    assert main(["report", "teach_conv_bn", "-o", str(out)]) == 0
    return out.read_text(encoding="utf-8")


def text_of(html: str) -> str:
    """The page's text with tags removed and whitespace collapsed."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).replace("&#x27;", "'")


def test_every_pass_is_in_the_table_with_its_node_counts(conv_bn_page):
    table = conv_bn_page[conv_bn_page.index('class="passes"'):]
    table = table[:table.index("</table>")]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", table)[1:]
    names = resolve_pipeline("O2")
    assert len(rows) == len(names)
    for row, name in zip(rows, names):
        assert name in row
    fold = text_of(next(r for r in rows if "fold_batchnorm" in r))
    assert re.search(r"fold_batchnorm 7 6 1 .* ok \(max abs err", fold)
    assert "7 → 5 nodes" in text_of(conv_bn_page)


def test_diff_names_nodes_and_their_provenance(conv_bn_page):
    page = text_of(conv_bn_page)
    assert "Removed: 2 nodes" in page
    assert ("conv_good (Conv) — made by rule conv_bn from conv_good (Conv), "
            "bn_good (BatchNormalization)") in page


def test_near_misses_are_grouped_by_reason_with_the_blocking_consumer(conv_bn_page):
    page = text_of(conv_bn_page)
    assert "1 site: Conv output has another consumer (Relu 'relu_side')" in page
    row = re.search(r"conv_bn bn_shared output used only inside the match (.*?) "
                    r"BatchNormalization ← input 0: Conv relu_side", page)
    assert row and "2 consumers, Relu 'relu_side' outside the match" in row.group(1)


def test_roofline_and_memory_plan_are_told(conv_bn_page):
    page = text_of(conv_bn_page)
    assert re.search(r"Estimated speed-up on asic32: \d+\.\d\d×", page)
    for figure in ("arena peak", "naive total", "lower bound"):
        assert figure in page
    assert conv_bn_page.count("<svg") == 3 and 'class="roof"' in conv_bn_page   # + per pass
    assert conv_bn_page.count('class="buffer') >= 3   # the offset × time chart's tensors


def test_the_page_needs_no_network(conv_bn_page):
    links = re.findall(r"""\b(?:src|href)\s*=\s*["']?([^"'\s>]*)""", conv_bn_page)
    assert links and all(link.startswith("#") for link in links)
    assert "<script" not in conv_bn_page and "<link" not in conv_bn_page
    assert "<style>" in conv_bn_page


def test_a_model_onnxruntime_cannot_run_still_gets_a_report(tmp_path, capsys):
    model = bad_models.write(bad_models.custom_op(), str(tmp_path), "custom.onnx")
    out = tmp_path / "custom.html"
    assert main(["report", model, "-o", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    assert "Numerical check: not checked" in text_of(out.read_text(encoding="utf-8"))


@pytest.mark.parametrize("argv, needle", [
    (["--pipeline", "no_such_pass"], "no_such_pass"),
    (["--target", "no_such_chip"], "no_such_chip"),
    (["--bind", "batch"], "binding"),
    (["-o", "/nonexistent-dir/report.html"], "cannot write"),
])
def test_bad_arguments_are_one_line_and_exit_2(argv, needle, capsys):
    assert main(["report", "teach_conv_bn", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err


def test_names_from_a_model_cannot_inject_markup():
    cell = tag("td", "<script>alert(1)</script>", title='a" onmouseover="x')
    assert "<script>" not in cell and 'title="a&quot; onmouseover=&quot;x"' in cell
    assert tag("p", Markup("<b>kept</b>")) == "<p><b>kept</b></p>"


def test_the_traffic_story_follows_every_pass(tmp_path, capsys):
    out = tmp_path / "bert.html"
    assert main(["report", "bert_tiny_op13", "-o", str(out)]) == 0
    assert capsys.readouterr().out.startswith("sizes: batch=1,seq=128 (representative")
    page = out.read_text(encoding="utf-8")
    section = page[page.index('<section id="traffic"'):]
    section = section[:section.index("</section>")]
    marks = re.findall(r"<circle[^>]*><title>([^<]*)</title>", section)
    names = resolve_pipeline("O2")
    assert len(marks) == 4 * (1 + len(names))       # four figures, the input and every pass
    attention_pass = names.index("fuse_attention") + 1
    assert any(t.startswith(f"after pass {attention_pass} (fuse_attention): bytes moved")
               for t in marks)
    fused = text_of(section[section.index('class="fused"'):])
    attention = re.search(r"graphlab.Attention 2 ([\d.]+ \w+) ([\d.]+ \w+) (\d+)%", fused)
    assert attention and int(attention.group(3)) > 50
    assert "Symbolic dims priced at batch=1,seq=128" in text_of(page)
