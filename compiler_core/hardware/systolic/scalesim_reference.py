"""Run the real SCALE-Sim 3.0.0 (the optional `scalesim` package) on one GEMM or convolution.

Used to check the closed forms of `timing` against the reference users know, in the tests
and the benchmark. SCALE-Sim walks every cycle in Python, so keep the layers small.

Without a memory it runs in SCALE-Sim's bandwidth-estimate mode ("CALC"), which never
stalls, so its "Total Cycles" is the compute count our `scalesim` timing reproduces. With a
`MemoryConfig` it runs in its USER mode: SRAM sizes in kB, `Bandwidth` (the ofmap drain rate)
and `IfmapSRAMBankBandwidth` / `FilterSRAMBankBandwidth` (the refill rates), one bank each,
and the run keeps every figure of its three reports. SCALE-Sim 3.0.0 converts
one-element numpy arrays with int(), which numpy 2.4 refuses; while it runs, the builtin
`max` in its two affected modules is wrapped to hand int() a plain number instead of a
one-element array, which changes no value (checked against unpatched runs under an older
numpy), and restored afterwards.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import importlib.util
import io
import os
import tempfile
import time
from dataclasses import dataclass

import numpy as np

from compiler_core.hardware.systolic.mapping import DATAFLOW_MEANINGS, ConvShape, checked_choice, \
    positive_int
from compiler_core.hardware.systolic.memory_config import MemoryConfig

_PATCHED_MODULES = ("scalesim.memory.double_buffered_scratchpad_mem",
                    "scalesim.memory.read_buffer")

_CONFIG = """[general]
run_name = reference

[architecture_presets]
ArrayHeight: {rows}
ArrayWidth: {cols}
IfmapSramSzkB: {ifmap_kb}
FilterSramSzkB: {filter_kb}
OfmapSramSzkB: {ofmap_kb}
IfmapOffset: 0
FilterOffset: 10000000
OfmapOffset: 20000000
Bandwidth : {ofmap_bw}
Dataflow : {dataflow}
MemoryBanks: 1
ReadRequestBuffer: 32
WriteRequestBuffer: 32

[layout]
IfmapCustomLayout: False
IfmapSRAMBankBandwidth: {ifmap_bw}
IfmapSRAMBankNum: {banks}
IfmapSRAMBankPort: 2
FilterCustomLayout: False
FilterSRAMBankBandwidth: {filter_bw}
FilterSRAMBankNum: {banks}
FilterSRAMBankPort: 2

[sparsity]
SparsitySupport : false
SparseRep : ellpack_block
OptimizedMapping : false
BlockSize : 8
RandomNumberGeneratorSeed : 40

[run_presets]
InterfaceBandwidth: {mode}
UseRamulatorTrace: False
"""


@dataclass(frozen=True)
class ScaleSimRun:
    """The figures SCALE-Sim reports for one layer, and how long it took."""

    total_cycles: int
    total_cycles_with_prefetch: int
    stall_cycles: int
    mapping_efficiency: float
    seconds: float
    cpu_seconds: float = 0.0            # this process's CPU time (steadier on a busy machine)
    overall_utilization: float = 0.0
    compute_utilization: float = 0.0
    bandwidth: dict | None = None       # BANDWIDTH_REPORT: average words per cycle
    detail: dict | None = None          # DETAILED_ACCESS_REPORT: start, stop, count


def scalesim_available() -> bool:
    return importlib.util.find_spec("scalesim") is not None


def run_scalesim_gemm(M: int, N: int, K: int, rows: int, cols: int,
                      dataflow: str, memory: MemoryConfig | None = None) -> ScaleSimRun:
    """SCALE-Sim on (M x K) . (K x N), given to it as a GEMM topology."""
    dims = [positive_int(name, value) for name, value in (("M", M), ("N", N), ("K", K))]
    topology = "Layer, M, N, K,\nlayer0, {}, {}, {},\n".format(*dims)
    return _run(topology, rows, cols, dataflow, gemm_input=True, memory=memory)


def run_scalesim_conv(H: int, W: int, FH: int, FW: int, C: int, N: int, S: int, rows: int,
                      cols: int, dataflow: str, memory: MemoryConfig | None = None
                      ) -> ScaleSimRun:
    """SCALE-Sim on one unpadded convolution layer, given to it as a conv topology."""
    conv = ConvShape(H, W, FH, FW, C, N, S)
    topology = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, "
                "Channels, Num Filter, Strides,\n"
                f"layer0, {conv.H}, {conv.W}, {conv.FH}, {conv.FW}, {conv.C}, {conv.N}, "
                f"{conv.S},\n")
    return _run(topology, rows, cols, dataflow, gemm_input=False, memory=memory)


def _config(rows: int, cols: int, dataflow: str, memory: MemoryConfig | None) -> str:
    common = dict(rows=positive_int("rows", rows), cols=positive_int("cols", cols),
                  dataflow=checked_choice("dataflow", dataflow, DATAFLOW_MEANINGS))
    if memory is None:
        return _CONFIG.format(**common, ifmap_kb=1024, filter_kb=1024, ofmap_kb=1024,
                              ofmap_bw=10, ifmap_bw=10, filter_bw=10, banks=10, mode="CALC")
    return _CONFIG.format(**common, ifmap_kb=memory.sram("ifmap"),
                          filter_kb=memory.sram("filter"), ofmap_kb=memory.sram("ofmap"),
                          ofmap_bw=memory.words("ofmap"), ifmap_bw=memory.words("ifmap"),
                          filter_bw=memory.words("filter"), banks=1, mode="USER")


def _run(topology: str, rows: int, cols: int, dataflow: str, gemm_input: bool,
         memory: MemoryConfig | None) -> ScaleSimRun:
    from scalesim.scale_sim import scalesim

    config = _config(rows, cols, dataflow, memory)
    with tempfile.TemporaryDirectory() as folder:
        paths = {}
        for name, text in (("config.cfg", config), ("topology.csv", topology),
                           ("layout.csv", "Layer name,\n")):
            paths[name] = os.path.join(folder, name)
            with open(paths[name], "w", encoding="utf-8") as handle:
                handle.write(text)
        with _numpy_scalar_compat(), contextlib.redirect_stdout(io.StringIO()):
            started, started_cpu = time.perf_counter(), time.process_time()
            simulator = scalesim(save_disk_space=True, verbose=False,
                                 config=paths["config.cfg"], topology=paths["topology.csv"],
                                 layout=paths["layout.csv"], input_type_gemm=gemm_input)
            simulator.run_scale(top_path=folder)
            seconds = time.perf_counter() - started
            cpu_seconds = time.process_time() - started_cpu
    layer = simulator.runner.single_layer_sim_object_list[0]
    with_prefetch, total, stalls, overall, mapping_percent, compute = \
        layer.get_compute_report_items()
    bandwidth = dict(zip(("ifmap_sram", "filter_sram", "ofmap_sram", "ifmap_dram",
                          "filter_dram", "ofmap_dram"),
                         (float(v) for v in layer.get_bandwidth_report_items())))
    items = [int(v) for v in layer.get_detail_report_items()]
    detail = {}
    for index, (level, operand) in enumerate(
            [(lv, op) for lv in ("sram", "dram") for op in ("ifmap", "filter", "ofmap")]):
        start, stop, count = items[3 * index: 3 * index + 3]
        detail[f"{level}_{operand}"] = {"start": start, "stop": stop, "count": count}
    return ScaleSimRun(total_cycles=int(total), total_cycles_with_prefetch=int(with_prefetch),
                       stall_cycles=int(stalls), mapping_efficiency=mapping_percent / 100,
                       seconds=seconds, cpu_seconds=cpu_seconds,
                       overall_utilization=float(overall) / 100,
                       compute_utilization=float(compute) / 100, bandwidth=bandwidth,
                       detail=detail)


def _scalar_max(*args, **kwargs):
    result = builtins.max(*args, **kwargs)
    if isinstance(result, np.ndarray) and result.size == 1:
        return result.reshape(()).item()
    return result


@contextlib.contextmanager
def _numpy_scalar_compat():
    modules = [importlib.import_module(name) for name in _PATCHED_MODULES]
    for module in modules:
        module.max = _scalar_max
    try:
        yield
    finally:
        for module in modules:
            del module.max
