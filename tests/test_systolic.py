"""Systolic-array simulator: SCALE-Sim's cycle counts, the overlap model, stalls, and the
per-cycle events checked against a register-level simulation of the array."""

import itertools
import json
import math
import random
import time

import numpy as np
import pytest

from compiler_core.hardware.systolic import (ACTIVE, IDLE, LOADING, PADDING, PRELOAD,
                                             ScheduleError, schedule_conv, schedule_gemm)
from compiler_core.hardware.systolic.scalesim_reference import (run_scalesim_conv,
                                                                run_scalesim_gemm,
                                                                scalesim_available)
from compiler_core.hardware.systolic.memory_config import MemoryConfig
from compiler_core.hardware.targets import get_target
from compiler_core.records import to_json


def scalesim_closed_form(M, N, K, R, C, dataflow):
    if dataflow == "os":
        return math.ceil(M / R) * math.ceil(N / C) * (R + C + K - 2) - 1
    if dataflow == "ws":
        return math.ceil(K / R) * math.ceil(N / C) * (2 * R + C + M - 2) - 1
    return math.ceil(K / R) * math.ceil(M / C) * (2 * R + C + N - 2) - 1


# Hand-checked cases, each also run through SCALE-Sim 3.0.0 when this suite was written.
@pytest.mark.parametrize("M, N, K, R, C, dataflow, cycles", [
    # os: folds = ceil(5/4) * ceil(6/4) = 2 * 2 = 4; per fold R + C + K - 2 = 4+4+7-2 = 13;
    #     4 * 13 - 1 = 51
    (5, 6, 7, 4, 4, "os", 51),
    # ws: folds = ceil(K/R) * ceil(N/C) = 2 * 2 = 4; per fold 2R + C + M - 2 = 8+4+5-2 = 15;
    #     4 * 15 - 1 = 59
    (5, 6, 7, 4, 4, "ws", 59),
    # is: folds = ceil(K/R) * ceil(M/C) = 2 * 2 = 4; per fold 2R + C + N - 2 = 8+4+6-2 = 16;
    #     4 * 16 - 1 = 63
    (5, 6, 7, 4, 4, "is", 63),
    # os, exact fit: 2 * 2 folds of 4+4+8-2 = 14 cycles; 4 * 14 - 1 = 55
    (8, 8, 8, 4, 4, "os", 55),
    # os on a 1-column array: ceil(3/3) * ceil(3/1) = 3 folds of 3+1+5-2 = 7; 3 * 7 - 1 = 20
    (3, 3, 5, 3, 1, "os", 20),
    # ResNet-50 layer1 1x1 conv as GEMM, 32x32 os: ceil(3136/32) * ceil(64/32) = 98 * 2
    #     = 196 folds of 32+32+64-2 = 126; 196 * 126 - 1 = 24695
    (3136, 64, 64, 32, 32, "os", 24695),
])
def test_scalesim_timing_matches_hand_checked_cases(M, N, K, R, C, dataflow, cycles):
    schedule = schedule_gemm(M, N, K, R, C, dataflow, timing="scalesim")
    assert schedule.cycles == cycles
    assert schedule.stall_cycles == 0


def test_scalesim_timing_matches_the_closed_forms_on_many_shapes():
    for M, N, K, R, C in itertools.product((1, 3, 8, 13), (1, 5, 8), (2, 7, 16), (1, 4, 5),
                                           (2, 4, 7)):
        for dataflow in ("os", "ws", "is"):
            schedule = schedule_gemm(M, N, K, R, C, dataflow, timing="scalesim")
            assert schedule.cycles == scalesim_closed_form(M, N, K, R, C, dataflow)


def test_conv_is_its_im2col_gemm():
    # 7x7x2 input, five 3x3 filters, stride 2: OH = OW = ceil((7-3+2)/2) = 3,
    # so M = 9, K = 3*3*2 = 18, N = 5. os on 4x4: ceil(9/4) * ceil(5/4) = 6 folds of
    # 4+4+18-2 = 24 cycles: 6 * 24 - 1 = 143 (SCALE-Sim reports 143).
    schedule = schedule_conv(7, 7, 3, 3, 2, 5, 2, rows=4, cols=4, timing="scalesim")
    assert schedule.cycles == 143
    report = schedule.report()
    assert report["gemm"] == {"M": 9, "N": 5, "K": 18}
    assert report["conv"]["OH"] == report["conv"]["OW"] == 3


@pytest.mark.skipif(not scalesim_available(), reason="SCALE-Sim (package scalesim) not installed")
@pytest.mark.parametrize("M, N, K, R, C, dataflow", [
    (5, 6, 7, 4, 4, "os"), (9, 3, 10, 4, 2, "ws"), (6, 11, 5, 3, 4, "is"),
])
def test_scalesim_timing_equals_real_scalesim(M, N, K, R, C, dataflow):
    reference = run_scalesim_gemm(M, N, K, R, C, dataflow)
    ours = schedule_gemm(M, N, K, R, C, dataflow, timing="scalesim")
    assert ours.cycles == reference.total_cycles
    assert reference.stall_cycles == 0
    assert ours.mapping_efficiency == pytest.approx(reference.mapping_efficiency)


@pytest.mark.skipif(not scalesim_available(), reason="SCALE-Sim (package scalesim) not installed")
def test_scalesim_timing_equals_real_scalesim_on_a_conv():
    reference = run_scalesim_conv(8, 6, 3, 2, 3, 4, 1, rows=4, cols=8, dataflow="ws")
    ours = schedule_conv(8, 6, 3, 2, 3, 4, 1, rows=4, cols=8, dataflow="ws", timing="scalesim")
    assert ours.cycles == reference.total_cycles


@pytest.mark.parametrize("M, N, R, C, divides", [
    (8, 8, 4, 4, True), (5, 8, 4, 4, False), (8, 6, 4, 4, False), (12, 4, 4, 4, True),
    (3, 3, 4, 4, False),
])
def test_mapping_efficiency_is_below_one_exactly_when_dims_do_not_divide(M, N, R, C, divides):
    efficiency = schedule_gemm(M, N, 10, R, C, "os").mapping_efficiency
    assert (efficiency == 1.0) == divides
    assert 0 < efficiency <= 1
    # useful PE-slots / PE-slots: M * N over folds * R * C
    assert efficiency == pytest.approx(M * N / (math.ceil(M / R) * math.ceil(N / C) * R * C))


def test_overlap_hand_checked_case():
    # ws, M=5 N=6 K=7 on 4x4: P = R = 4, T = M = 5, S = R + C - 2 = 6, gap = max(T, R) = 5,
    # 4 folds: 4 + 3 * 5 + 6 + 5 - 1 = 29 (scalesim: 59)
    schedule = schedule_gemm(5, 6, 7, 4, 4, "ws", timing="overlap")
    assert schedule.cycles == 29 and schedule.stall_cycles == 0
    assert schedule.report()["cycles_per_fold"] == [[5, 3], [15, 1]]


def test_overlap_is_never_slower_than_scalesim():
    for M, N, K, R, C in itertools.product((1, 2, 9, 40), (1, 6, 33), (1, 3, 17), (1, 2, 8),
                                           (1, 5, 8)):
        for dataflow in ("os", "ws", "is"):
            overlap = schedule_gemm(M, N, K, R, C, dataflow, "overlap", target="teach16")
            scalesim = schedule_gemm(M, N, K, R, C, dataflow, "scalesim", target="teach16")
            assert overlap.cycles - overlap.stall_cycles <= scalesim.cycles
            if overlap.stall_cycles == 0:
                assert overlap.cycles <= scalesim.cycles


def test_stalls_appear_when_bandwidth_is_tiny_and_vanish_when_it_is_huge():
    shape = dict(M=64, N=64, K=64, rows=16, cols=16, dataflow="os", dtype="float32")
    starved = schedule_gemm(**shape, memory=MemoryConfig((16, 16, 32), (1, 1, 1)))
    plenty = schedule_gemm(**shape, memory=MemoryConfig((16, 16, 32), (10**6,) * 3))
    assert starved.stall_cycles > 0 and plenty.stall_cycles == 0
    assert starved.cycles == plenty.cycles + starved.stall_cycles
    # SCALE-Sim's own memory model (one byte a word) stalls when the operands outgrow
    # small SRAMs, and never when everything fits
    assert schedule_gemm(**shape, timing="scalesim",
                         memory=MemoryConfig((1, 1, 1), (1, 1, 1))).stall_cycles > 0
    assert schedule_gemm(**shape, timing="scalesim",
                         memory=MemoryConfig((64, 64, 64), (10**4,) * 3)).stall_cycles == 0


def test_stall_hand_checked_case():
    # os, float32, M = 32 (2 row folds), N = K = 16 on 16x16, 1 byte per cycle on each
    # interface. Fold 1 fetches a new A tile, 16x16x4 = 1024 B (ifmap interface), keeps its
    # B tile, and fold 0 stores its C tile, 1024 B (ofmap interface): both take 1024 cycles in
    # parallel; the tiles fit half of every SRAM, so gap = max(T, R) = 16 is hidden:
    # stall = 1024 - 16 = 1008.
    schedule = schedule_gemm(32, 16, 16, dtype="float32", target="teach16",
                             memory=MemoryConfig((16, 16, 32), (1, 1, 1)))
    assert schedule.report()["memory"]["double_buffered"]
    assert schedule.stall_cycles == 1008


def test_without_room_to_double_buffer_no_fetch_is_hidden():
    # same problem with 1 kB per SRAM: each 1 KiB tile fits once but not twice, so fold 1
    # waits for all of it: 1024 B / 16 B per cycle = 64 cycles.
    schedule = schedule_gemm(32, 16, 16, dtype="float32", target="teach16",
                             memory=MemoryConfig((1, 1, 1), (16, 16, 16)))
    memory = schedule.report()["memory"]
    assert memory["fits"] and not memory["double_buffered"]
    assert schedule.stall_cycles == 64


def test_per_fold_closed_forms_agree_with_a_fold_by_fold_walk():
    """Stalls, stream starts, run-lengths and DRAM totals are computed per block of identical
    folds; walk every fold and compare."""
    rng = random.Random(7)
    for _ in range(200):
        M, N, K = (rng.randint(1, 40) for _ in range(3))
        R, C = rng.randint(1, 9), rng.randint(1, 9)
        memory = MemoryConfig([rng.choice([1, 4, 64, 1024]) for _ in range(3)],
                              [rng.choice([1, 3, 16, 10**6]) for _ in range(3)])
        schedule = schedule_gemm(M, N, K, R, C, rng.choice(["os", "ws", "is"]),
                                 timing="overlap", memory=memory, dtype="float16")
        timeline, mapping = schedule.timeline, schedule.mapping
        traffic = timeline.traffic
        gap = max(timeline.stream, R)
        start, stalls, reads, writes = timeline.preload, [], 0, 0
        for fold in range(mapping.folds):
            row_fold, col_fold = fold % mapping.row_folds, fold // mapping.row_folds
            for operand in ("A", "B", "C"):
                assert traffic.tile_bytes(operand, row_fold, col_fold) == math.ceil(
                    mapping.tile_elements(operand, row_fold, col_fold) * traffic.element_bytes)
            moved = traffic.window_bytes(row_fold, col_fold)
            window = max(math.ceil(moved[o] / (memory.words(name) * 1)) for o, name in
                         (("A", "ifmap"), ("B", "filter"), ("C", "ofmap")))
            stall = 0 if fold == 0 else (max(0, window - gap) if traffic.double_buffered
                                         else window)
            start += 0 if fold == 0 else gap + stall
            stalls.append(stall)
            reads += traffic.fetch_bytes(row_fold, col_fold)
            writes += traffic.store_bytes(row_fold, col_fold)
            assert timeline.stream_start(fold) == start and timeline.stall(fold) == stall
        assert schedule.cycles == start + timeline.skew + timeline.stream - 1
        assert schedule.stall_cycles == sum(stalls)
        assert (traffic.dram_read_bytes, traffic.dram_write_bytes) == (reads, writes)
        per_fold = [timeline.fold_cycles(f) for f in range(mapping.folds)]
        assert sum(per_fold) == schedule.cycles + 1
        form, pairs = timeline.cycles_per_fold(limit=rng.choice([1, 4, 1000]))
        if form == "runs":
            assert [v for v, count in pairs for _ in range(count)] == per_fold
        else:
            assert pairs == sorted([v, per_fold.count(v)] for v in set(per_fold))


def brute_force_active(M, N, K, R, C, dataflow, fold):
    """Active-PE counts per compute cycle of one fold, by moving values through registers:
    the streamed operand enters row i at cycle t - i and shifts one column right per cycle
    (os: the other operand enters column j at cycle t - j and shifts down; ws/is: the other
    operand sits in the PEs). A PE is active when it holds a valid streamed element."""
    rows_dim, cols_dim, stream = {"os": (M, N, K), "ws": (K, N, M), "is": (K, M, N)}[dataflow]
    row_folds = math.ceil(rows_dim / R)
    row_fold, col_fold = fold % row_folds, fold // row_folds
    rows_used = min(R, rows_dim - row_fold * R)
    cols_used = min(C, cols_dim - col_fold * C)
    left = [[None] * C for _ in range(R)]   # streamed value held by each PE
    down = [[None] * C for _ in range(R)]   # os only: the second operand moving down
    counts = []
    for t in range(R + C - 2 + stream):
        left = [[(t - i if 0 <= t - i < stream and i < rows_used else None)] + row[:-1]
                for i, row in enumerate(left)]
        if dataflow == "os":
            top = [t - j if 0 <= t - j < stream and j < cols_used else None for j in range(C)]
            down = [top] + down[:-1]
        active = 0
        for i in range(R):
            for j in range(C):
                value = left[i][j]
                if value is None or j >= cols_used:
                    continue
                if dataflow == "os" and down[i][j] != value:
                    continue
                active += 1
        counts.append(active)
    return counts


@pytest.mark.parametrize("dataflow", ["os", "ws", "is"])
def test_active_pes_match_a_register_level_simulation(dataflow):
    M, N, K, R, C = 7, 6, 5, 4, 3
    schedule = schedule_gemm(M, N, K, R, C, dataflow, timing="scalesim")
    start = schedule.timeline.preload
    for fold in range(schedule.folds):
        expected = brute_force_active(M, N, K, R, C, dataflow, fold)
        steps = schedule.fold_steps(fold)
        assert len(steps) == start + len(expected)
        got = [steps[start + t].active for t in range(len(expected))]
        assert got == expected
        # every multiply-accumulate of the fold happens exactly once
        row_fold, col_fold = schedule.mapping.fold_position(fold)
        assert sum(got) == (schedule.mapping.rows_used(row_fold)
                            * schedule.mapping.cols_used(col_fold) * schedule.timeline.stream)


def test_padding_pes_appear_only_in_edge_folds():
    # os, M = 5, N = 6 on 4x4: row folds cover M 0-3 | 4, column folds N 0-3 | 4-5
    schedule = schedule_gemm(5, 6, 7, 4, 4, "os")
    expected_padding = {0: 0, 1: 16 - 1 * 4, 2: 16 - 4 * 2, 3: 16 - 1 * 2}
    for fold, padding in expected_padding.items():
        for cycle in (0, 5, len(schedule.fold_steps(fold)) - 1):
            assert schedule.step(fold, cycle).padding == padding
    exact = schedule_gemm(8, 8, 7, 4, 4, "os")
    assert all(exact.step(f, 3).padding == 0 for f in range(exact.folds))


def test_step_phases_preload_and_tiles():
    # ws, 4x4, M = 5: preload 4, fill 3, stream 5, drain 3 = 15 local cycles per fold
    schedule = schedule_gemm(5, 6, 7, 4, 4, "ws", timing="scalesim")
    phases = [schedule.step(0, c).phase for c in range(15)]
    assert phases == ["preload"] * 4 + ["fill"] * 3 + ["stream"] * 5 + ["drain"] * 3
    first = schedule.step(0, 0)
    assert first.count(PRELOAD) == 4 and first.active == 0  # row 0 receives its weights
    assert schedule.step(0, 4).active == 1 and schedule.step(0, 4).pe_state[0, 0] == ACTIVE
    fold3 = schedule.step(3, 6)
    assert fold3.tiles["B"] == {"rows": [4, 7], "cols": [4, 6]}   # K 4..6, N 4..5
    assert fold3.tiles["A"] == {"rows": [0, 5], "cols": [4, 7]}   # all of M, K 4..6
    assert fold3.pe_state[3, 0] == PADDING and fold3.stream_dim == "M"
    assert json.dumps(to_json(fold3))
    steps = schedule.fold_steps(3)
    assert [s.phase for s in steps] == phases and steps[-1].phase == "drain"
    with pytest.raises(IndexError):
        steps[15]


@pytest.mark.parametrize("dataflow", ["os", "ws", "is"])
def test_a_fold_starts_loading_and_each_pe_goes_loading_active_idle(dataflow):
    """Cycle 0 of a fold is never a blank array: every PE of the used region is loading (or,
    under ws/is, row 0 already holds its preloaded value); from there each PE goes loading ->
    (preload) -> active -> idle (the last PE's last MAC ends the fold), once, and is active
    exactly T cycles."""
    schedule = schedule_gemm(10, 7, 9, 4, 4, dataflow, timing="overlap")
    timeline = schedule.timeline
    for fold in range(schedule.folds):
        first = schedule.step(fold, 0)
        used = first.pe_state != PADDING
        assert first.loading == used.sum() - (first.count(PRELOAD) + first.active)
        assert first.active <= 1 and first.idle == 0 and first.loading + first.count(PRELOAD) > 0
        order = {LOADING: 0, PRELOAD: 1, ACTIVE: 2, IDLE: 3}
        states = np.stack([s.pe_state for s in schedule.fold_steps(fold)])
        for i, j in zip(*np.nonzero(used)):
            ranks = [order[s] for s in states[:, i, j]]
            assert ranks == sorted(ranks) and ranks[-1] >= order[ACTIVE]
            assert ranks.count(order[ACTIVE]) == timeline.stream


def test_steps_show_stalls():
    schedule = schedule_gemm(32, 16, 16, dtype="float32", target="teach16",
                             memory=MemoryConfig((16, 16, 32), (1, 1, 1)))
    waiting = schedule.step(1, 0)
    assert waiting.stall and waiting.phase == "stall" and waiting.active == 0
    assert waiting.loading == 16 * 16   # the fold's operands are on their way from memory
    assert not schedule.step(1, 1008).stall


def test_fold_phases_tile_the_fold_and_name_every_step():
    stalled = schedule_gemm(32, 16, 16, dtype="float32", target="teach16",
                            memory=MemoryConfig((16, 16, 32), (1, 1, 1)))
    for schedule in (schedule_gemm(5, 6, 7, 4, 4, "ws"), schedule_gemm(9, 3, 2, 1, 1, "os"),
                     stalled):
        for fold in range(schedule.folds):
            spans = schedule.timeline.fold_phases(fold)
            assert spans[0][1] == 0 and spans[-1][2] == schedule.timeline.fold_length(fold)
            assert all(a[2] == b[1] for a, b in zip(spans, spans[1:]))
            for phase, start, stop in spans:
                assert {schedule.step(fold, c).phase for c in (start, stop - 1)} == {phase}
    assert [p for p, _, _ in stalled.timeline.fold_phases(1)][0] == "stall"


def test_random_access_into_a_huge_schedule_is_cheap():
    started = time.perf_counter()
    schedule = schedule_gemm(100_000, 100_000, 4096, dataflow="ws", target="teach16")
    assert schedule.folds == 256 * 6250
    report = schedule.report()
    last = schedule.folds - 1
    step = schedule.step(last, schedule.timeline.fold_length(last) - 1)
    fold, cycle = schedule.fold_at(schedule.cycles // 2)
    schedule.step(fold, cycle)
    assert time.perf_counter() - started < 10.0  # materialising the folds would take hours
    assert report["cycles_per_fold_form"] in ("runs", "histogram")
    assert len(report["cycles_per_fold"]) <= 256
    assert step.phase == "drain"


def test_report_has_the_documented_keys_and_is_json():
    report = schedule_gemm(100, 70, 30, 16, 16, "is", target="teach16").report()
    for key in ("cycles", "folds", "cycles_per_fold", "mapping_efficiency", "utilization",
                "stall_cycles", "dataflow", "array", "timing", "gemm", "macs", "phases"):
        assert key in report
    assert report["array"] == "16x16" and report["timing"] == "overlap"
    assert report["macs"] == 100 * 70 * 30
    assert 0 < report["utilization"] <= 1 and 0 < report["mapping_efficiency"] <= 1
    phases = report["phases"]
    assert (phases["preload"] + phases["fill"] + phases["stream"] + phases["drain"]
            + phases["stall"] - phases["overlapped"]) == report["cycles"] + 1
    assert sum(v * n for v, n in report["cycles_per_fold"]) == report["cycles"] + 1
    assert json.loads(json.dumps(report)) == report


def test_utilization_never_exceeds_one_even_on_a_single_pe():
    # a 1x1 array doing a 5-long dot product: 5 MACs in 5 busy cycles (cycles = 4)
    schedule = schedule_gemm(1, 1, 5, 1, 1, "os", timing="scalesim")
    assert schedule.cycles == 4 and schedule.utilization == 1.0


def test_array_shape_comes_from_the_target_unless_given():
    assert schedule_gemm(10, 10, 10).report()["array"] == "128x128"
    assert schedule_gemm(10, 10, 10, target="tpu_v1").report()["array"] == "256x256"
    assert schedule_gemm(10, 10, 10, 8, 4, target="tpu_v1").report()["array"] == "8x4"


@pytest.mark.parametrize("call, words", [
    (lambda: schedule_gemm(0, 4, 4), "M must be positive"),
    (lambda: schedule_gemm(4, -2, 4), "N must be positive"),
    (lambda: schedule_gemm(4, 4, 2.5), "K must be a positive whole number"),
    (lambda: schedule_gemm(4, 4, True), "K must be a positive whole number"),
    (lambda: schedule_gemm(4, 4, 4, rows=0), "rows must be positive"),
    (lambda: schedule_gemm(4, 4, 4, dataflow="xs"), "unknown dataflow 'xs'"),
    (lambda: schedule_gemm(4, 4, 4, timing="fast"), "unknown timing model 'fast'"),
    (lambda: schedule_gemm(4, 4, 4, dtype="float33"), "unknown dtype 'float33'"),
    (lambda: schedule_conv(5, 5, 7, 3, 1, 1, 1), "filter 7x3 is bigger than the input 5x5"),
    (lambda: schedule_conv(5, 5, 3, 3, 1, 1, 0), "S must be positive"),
    (lambda: schedule_gemm(4, 4, 4, 2, 2).step(4, 0), "fold 4 does not exist"),
    (lambda: schedule_gemm(4, 4, 4, 2, 2).step(0, 99), "cycle 99 is outside fold 0"),
    (lambda: schedule_gemm(4, 4, 4, 2, 2).fold_at(10**6), "outside the schedule"),
])
def test_bad_inputs_raise_clear_value_errors(call, words):
    with pytest.raises(ScheduleError) as caught:
        call()
    assert isinstance(caught.value, ValueError)
    assert words in str(caught.value)


MEMORY_FIELDS = ("cycles", "stall_cycles", "sram_reads", "sram_writes", "dram_reads",
                 "dram_writes", "sram_cycles", "dram_cycles")


def scalesim_figures(reference) -> dict:
    """SCALE-Sim's reports in the keys of our schedule report."""
    detail = reference.detail
    return {
        "cycles": reference.total_cycles, "stall_cycles": reference.stall_cycles,
        "sram_reads": {o: detail[f"sram_{o}"]["count"] for o in ("ifmap", "filter")},
        "sram_writes": {"ofmap": detail["sram_ofmap"]["count"]},
        "dram_reads": {o: detail[f"dram_{o}"]["count"] for o in ("ifmap", "filter")},
        "dram_writes": {"ofmap": detail["dram_ofmap"]["count"]},
        "sram_cycles": {o: [detail[f"sram_{o}"]["start"], detail[f"sram_{o}"]["stop"]]
                        for o in ("ifmap", "filter", "ofmap")},
        "dram_cycles": {o: [detail[f"dram_{o}"]["start"], detail[f"dram_{o}"]["stop"]]
                        for o in ("ifmap", "filter", "ofmap")},
    }


@pytest.mark.skipif(not scalesim_available(), reason="SCALE-Sim (package scalesim) not installed")
@pytest.mark.parametrize("kind, dims, R, C, dataflow, sram, words", [
    ("gemm", (30, 20, 40), 8, 8, "os", (1, 1, 1), (1, 1, 1)),
    ("gemm", (17, 9, 23), 4, 8, "ws", (1, 2, 1), (4, 2, 3)),
    ("gemm", (30, 20, 40), 8, 8, "is", (2, 1, 1), (10, 10, 10)),
    ("conv", (9, 9, 3, 3, 4, 6, 2), 8, 4, "ws", (1, 1, 1), (1, 1, 1)),
    ("conv", (8, 7, 3, 2, 3, 5, 1), 4, 4, "is", (1, 2, 1), (4, 2, 3)),
    # windows past the input, preloaded: each row of a tile rises, the tile does not
    ("conv", (29, 33, 3, 3, 4, 11, 5), 4, 8, "is", (1, 1, 1), (5, 2, 1)),
])
def test_memory_figures_equal_real_scalesim_in_user_mode(kind, dims, R, C, dataflow, sram,
                                                         words):
    memory = MemoryConfig(sram, words)
    if kind == "gemm":
        reference = run_scalesim_gemm(*dims, R, C, dataflow, memory)
        report = schedule_gemm(*dims, R, C, dataflow, "scalesim", memory=memory).report()
    else:
        reference = run_scalesim_conv(*dims, R, C, dataflow, memory)
        report = schedule_conv(*dims, rows=R, cols=C, dataflow=dataflow, timing="scalesim",
                               memory=memory).report()
    assert {key: report[key] for key in MEMORY_FIELDS} == scalesim_figures(reference)
    assert report["memory"]["cycles_with_prefetch"] == reference.total_cycles_with_prefetch
    bandwidth = report["memory"]["bandwidth_report"]
    assert bandwidth == pytest.approx(reference.bandwidth, rel=1e-12)


def test_scalesim_memory_of_the_issue_example_stalls_most_of_the_time():
    # 100x72x50 on 16x16, os, 1 kB per operand, 1 word per cycle: SCALE-Sim 3.0.0 reports
    # 114,476 cycles of which 111,677 stall (checked against the package when written)
    report = schedule_gemm(100, 72, 50, 16, 16, "os", "scalesim",
                           memory=MemoryConfig((1, 1, 1), (1, 1, 1))).report()
    assert (report["cycles"], report["stall_cycles"]) == (114476, 111677)
    # every refill brings 512 words; reads are whole refills plus the first fill
    memory = report["memory"]
    for operand in ("ifmap", "filter"):
        assert report["dram_reads"][operand] == 512 * (1 + memory["refills"][operand])
    assert report["dram_writes"]["ofmap"] == 100 * 72
    assert json.loads(json.dumps(report)) == report


def test_more_bandwidth_never_stalls_more_and_energy_splits_by_level():
    shape = dict(M=60, N=40, K=30, rows=8, cols=8, dataflow="ws")
    stalls = [schedule_gemm(**shape, timing=timing, memory=MemoryConfig((1, 1, 1), (w,) * 3))
              .stall_cycles for timing in ("overlap",) for w in (1, 4, 64)]
    assert stalls == sorted(stalls, reverse=True) and stalls[0] > stalls[-1]
    report = schedule_gemm(**shape, dtype="int8", memory=MemoryConfig((1, 1, 1), (1, 1, 1))
                           ).report()
    energy = report["energy"]
    assert set(energy["joules"]) == {"mac", "register", "sram", "dram"}
    assert energy["total_joules"] == pytest.approx(sum(energy["joules"].values()))
    # int8 MAC at 45 nm: 0.2 pJ multiply + 0.03 pJ add
    assert energy["joules"]["mac"] == pytest.approx(60 * 40 * 30 * 0.23e-12)
    # every DRAM byte costs 1.95 nJ / 8
    moved = sum(report["dram_reads"].values()) + sum(report["dram_writes"].values())
    assert energy["joules"]["dram"] == pytest.approx(moved * 1950e-12 / 8)
    assert energy["energy_delay_product"] == pytest.approx(
        energy["total_joules"] * (report["cycles"] + 1) / get_target().clock_hz)


def test_overlap_fold_records_show_sram_halves_and_refills():
    schedule = schedule_gemm(32, 16, 16, dtype="float32", target="teach16",
                             memory=MemoryConfig((16, 16, 32), (1, 1, 1)))
    folds = schedule.report()["memory"]["folds"]
    assert [f["stall"] for f in folds] == [0, 1008]
    assert folds[0]["sram"]["ifmap"] == {"half_bytes": 8192, "in_use": 1024, "arriving": 1024}
    assert folds[1]["refill_bytes"] == {"ifmap": 1024, "filter": 0} and folds[1]["drain_bytes"] == 1024
