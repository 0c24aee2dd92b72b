"""The systolic array with its memory, as a student uses it: open a CNN, go to the Systolic tab,
choose a convolution, give the array small SRAMs and a narrow DRAM interface, step, and read
what each SRAM half holds, how long the array waits and how much DRAM traffic has passed —
each figure checked against compiler_core's records of the same schedule; then the three
dataflows compared and the model summed pass by pass.  At a projector's 1280×800 and at
1600×1000; screenshots under the test's tmp folder (GRAPHLAB_SCREENSHOTS=DIR keeps them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from benchmarks.journeys import Person, chromium
from compiler_core.hardware import gemm_problems
from compiler_core.hardware.cost import compute_dtype
from compiler_core.hardware.gemm_shapes import has_gemm
from compiler_core.hardware.systolic.memory_config import OPERANDS, MemoryConfig
from compiler_core.hardware.systolic.memory_steps import dram_traffic, memory_step
from compiler_core.compilation import compile_model
from compiler_core.compilation.pass_schedules import pass_schedules
from compiler_core.hardware.systolic_choices import compare_dataflows
from compiler_core.ir import load_model
from graphlab.app.systolic_view import TIMING_NAMES, array_problem
from graphlab.samples import resolve_model, size_hints
from graphlab.units import format_bytes

from pane_helpers import chart_js

pytestmark = pytest.mark.browser

SMALL = "ifmap=1,filter=1,ofmap=1"      # 1 kB per operand, 1 word per cycle: it stalls
SIZES = [(1280, 800), (1600, 1000)]


def cnn_pipeline():
    compiled = compile_model(load_model(resolve_model("cnn_bn")), "O2",
                             size_hints=size_hints("cnn_bn"))   # as the app does
    return compiled, compiled.bindings


def plot(person: Person, graph_id: str, script: str):
    return chart_js(person.driver, graph_id, script)


def type_into(person: Person, css: str, text: str) -> None:
    box = person.driver.find_element(By.CSS_SELECTOR, css)
    box.clear()
    box.send_keys(text + Keys.ENTER)
    person.wait_idle()


def choose_gemm(person: Person, name: str) -> None:
    """Open the GEMM dropdown and click the option naming ``name``."""
    person.driver.find_element(By.CSS_SELECTOR, "#systolic-gemm-select").click()
    person.wait_idle()
    for option in person.driver.find_elements(By.CSS_SELECTOR, "[role=option]"):
        if name in option.text:
            option.click()
            person.wait_idle()
            return
    raise AssertionError(f"no GEMM option names {name}")


def drawn_memory(person: Person) -> dict:
    """What the SRAM chart and the DRAM chart show: the bars' shares and texts, the title,
    the cursor and each operand's last point."""
    return {
        "title": plot(person, "systolic-sram-halves", "return gd.layout.title.text;"),
        "labels": plot(person, "systolic-sram-halves", "return gd.data[0].y;"),
        "there": plot(person, "systolic-sram-halves", "return gd.data[1].x;"),
        "whole": plot(person, "systolic-sram-halves", "return gd.data[0].x;"),
        "texts": plot(person, "systolic-sram-halves", "return gd.data[2].text;"),
        "cursor": plot(person, "systolic-dram", "return gd.layout.shapes[0].x0;"),
        "last": plot(person, "systolic-dram",
                     "return gd.data.slice(0, 3).map(t => t.y[t.y.length - 1]);"),
    }


def expected_bars(record: dict) -> tuple[list, list, list]:
    """What the SRAM chart must draw for a `memory_step` record: each half's share there and
    whole (% of the half, clipped at 100) and the bytes there, as its text starts."""
    there, whole, texts = [], [], []
    for operand in OPERANDS:
        sram = record["sram"][operand]
        half, in_use, other = sram["half_bytes"], sram["in_use"], sram["other"]
        filled = other["bytes"] - other["done"] if other["role"] == "draining" else other["done"]
        for now, full in ((in_use["ready"], in_use["bytes"]), (filled, other["bytes"])):
            there.append(min(100, 100 * now / half))
            whole.append(min(100, 100 * full / half))
            texts.append(f"{format_bytes(now)} of {format_bytes(full)}")
    return there, whole, texts


def assert_bars(shown: dict, record: dict) -> None:
    there, whole, texts = expected_bars(record)
    assert shown["there"] == pytest.approx(there) and shown["whole"] == pytest.approx(whole)
    assert [t.split(" · ")[0] for t in shown["texts"]] == texts


def fold_and_cycle(person: Person) -> tuple[int, int]:
    title = plot(person, "systolic-heatmap", "return gd.layout.title.text;")
    import re
    fold, cycle = re.match(r"fold (\d+) of \d+, cycle (\d+)", title).groups()
    return int(fold) - 1, int(cycle)


def save_at(person: Person, css: str, path: Path) -> None:
    """A screenshot of the page scrolled so that ``css`` is at the top of its column."""
    person.driver.execute_script(f"document.querySelector('{css}').scrollIntoView();")
    person.wait_idle()
    person.driver.save_screenshot(str(path))


def totals_of(schedule) -> list:
    """Each operand's DRAM traffic, from the schedule's report: where its line must end
    (bytes; SCALE-Sim's words, an element a word)."""
    report = schedule.report()
    moved = {**report["dram_reads"], **report["dram_writes"]}
    size = schedule.timeline.traffic.element_bytes if report["timing"] == "overlap" else 1
    return [moved[o] * size for o in OPERANDS]


def assert_sound(person: Person, where: str) -> None:
    errors = person.console_errors()
    assert not errors, f"{where}: console errors: {errors[:2]}"
    cut = person.cut_off()
    assert not cut, f"{where}: text cut off: {cut}"


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_student_starves_the_array_and_sees_it_wait(served, shots, size):
    result, bindings = cnn_pipeline()
    graph = result.sized(result.final)
    conv = [n for n in graph.nodes if has_gemm(n)][1]     # the second convolution
    problem = gemm_problems(conv, bindings)[0]
    memory = MemoryConfig((1, 1, 1), (1, 1, 1), 1, "given")
    arrayed = array_problem(problem, 16, 16, "os", "overlap", "asic32", compute_dtype(conv),
                            memory.sram_kb, memory.bandwidth)
    schedule = arrayed.schedule()
    report = schedule.report()
    assert report["stall_cycles"] > 0

    person = Person(chromium(*size), served)
    tag = f"{size[0]}x{size[1]}"
    try:
        person.open(f"?model=cnn_bn&pass={len(result.snapshots)}&array=16x16")
        person.open_tab("Systolic")
        choose_gemm(person, conv.name.strip("/"))
        assert f"node={conv.id}" in person.url_query()
        type_into(person, "#systolic-sram", SMALL)
        type_into(person, "#systolic-bandwidth", SMALL)
        assert "sram=" in person.url_query() and "bw=" in person.url_query()
        assert person.eventually(lambda: "1 kB" in person.text("#systolic-source"), 10)

        totals = person.text("#systolic-totals")
        assert f"{report['stall_cycles']:,}" in totals, totals

        # the first step: the first fill, nothing waits yet; the DRAM chart ends at the totals
        shown = drawn_memory(person)
        assert shown["last"] == totals_of(schedule)
        assert dram_traffic(schedule)["waiting"], "a stalling schedule draws the array waiting"

        # the next fold begins with the array waiting for its tiles
        person.click("#systolic-next-fold")
        assert person.eventually(lambda: fold_and_cycle(person) == (1, 0), 10)
        record = memory_step(schedule, 1, 0)
        assert record["waiting"] and record["stall"] == schedule.timeline.stall(1) > 0
        shown = drawn_memory(person)
        assert "the array waits" in shown["title"]
        assert f"{record['stall_left']:,} of {record['stall']:,} cycles left" in shown["title"]
        assert_bars(shown, record)
        assert shown["cursor"] == record["clock"]
        save_at(person, "#systolic-sram-halves", shots / f"systolic-memory-{tag}-waiting.png")

        # a phase on: the wait is over, the array computes, the bars moved
        person.click("#systolic-next-phase")
        fold, cycle = fold_and_cycle(person)
        record = memory_step(schedule, fold, cycle)
        assert not record["waiting"]
        assert person.eventually(lambda: drawn_memory(person)["cursor"] == record["clock"], 10)
        shown = drawn_memory(person)
        assert_bars(shown, record)
        assert "the array computes" in shown["title"]
        assert f"{record['stalled_before']:,} of {record['stall_cycles']:,}" in shown["title"]
        assert_sound(person, "stepping with memory")

        # the three dataflows, on request
        person.click("#systolic-choices-button")
        assert person.eventually(lambda: "WS" in person.text("#systolic-choices"), 20)
        comparison = compare_dataflows(
            lambda d: arrayed.schedule(dataflow=d).report())["dataflows"]
        table = person.text("#systolic-choices")
        for flow in ("os", "ws", "is"):
            assert f"{comparison[flow]['stall_cycles']:,}" in table
        assert plot(person, "systolic-sweep", "return gd.data.length;") == 12
        save_at(person, "#systolic-choices", shots / f"systolic-memory-{tag}-choices.png")

        # the whole model, pass by pass
        person.click("#systolic-passes-button")
        assert person.eventually(lambda: "GEMMs" in person.text("#systolic-passes"), 20)
        rows = pass_schedules(result.result, bindings, rows=16, cols=16, dataflow="os",
                              timing="overlap", target="asic32", memory=memory)
        table = person.text("#systolic-passes")
        for row in (rows[0], rows[-1]):
            assert f"{row['cycles']:,}" in table and f"{row['dram']:,}" in table
        assert_sound(person, "the comparisons")

        # SCALE-Sim's timing: its replay's waits and refills at the step shown
        person.click("#systolic-timing input[value=scalesim]")
        scalesim = array_problem(problem, 16, 16, "os", "scalesim", "asic32",
                                 compute_dtype(conv), memory.sram_kb, memory.bandwidth).schedule()
        assert person.eventually(lambda: "compute row" in (drawn_memory(person)["title"] or ""),
                                 20)
        person.click("#systolic-next-fold")
        assert person.eventually(lambda: fold_and_cycle(person) == (1, 0), 10)
        record = memory_step(scalesim, 1, 0)
        assert record["stalled_before"] > 0
        assert person.eventually(lambda: drawn_memory(person)["cursor"] == record["clock"], 10)
        shown = drawn_memory(person)
        assert f"compute row {record['row']:,}" in shown["title"]
        assert f"waited so far: {record['stalled_before']:,} of " \
               f"{scalesim.stall_cycles:,}" in shown["title"]
        arrived = record["refills"]["ifmap"]
        assert shown["texts"][0] == f"{arrived['arrived']:,} of {arrived['total']:,}"
        assert shown["last"] == [total for total in totals_of(scalesim)]
        save_at(person, "#systolic-sram-halves", shots / f"systolic-memory-{tag}-scalesim.png")

        # what was asked for follows the new timing, with no click again
        assert person.eventually(lambda: f"Under the {TIMING_NAMES['scalesim']} timing"
                                 in person.text("#systolic-choices"), 20)
        rows = pass_schedules(result.result, bindings, rows=16, cols=16, dataflow="os",
                              timing="scalesim", target="asic32", memory=memory)
        assert person.eventually(lambda: f"{rows[-1]['cycles']:,}"
                                 in person.text("#systolic-passes"), 20)
        assert_sound(person, "SCALE-Sim's timing")
    finally:
        person.driver.quit()
