"""This machine as a hardware target: its peak rates and bandwidth measured, not quoted.

`measure_machine` runs micro-benchmarks in onnxruntime in a child process (`machine_child`):
a large matmul per dtype for the peak (at the thread count profiling uses), ResNet-sized
3x3 convolutions at stride 1 and 2 for the rates of convolutions (`hardware.rate_kinds`), a
large copy for the bandwidth, a large float16 to float32 Cast for the casts onnxruntime
inserts, and a chain of one-element ops for what an op costs beyond its work.  The target
file it writes says it was measured, when and how (`measured`), lives in the user's data
folder (`targets.user_targets_dir`), and is then found by name like a built-in target.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from ..errors import GraphLabError
from ..hardware.targets import Target, get_target, measured_targets, target_from_dict, \
    user_targets_dir
from ..runtime_check import child_environment

MACHINE_TARGET = "this_machine"
MEASURE_TIMEOUT_SECONDS = 600
DEFAULT_THREADS = os.cpu_count() or 1
_SIMD_LANES = {"avx512f": 16, "avx2": 8, "avx": 8, "sse2": 4}   # float32 lanes per vector


def busy_note() -> str | None:
    """Why measured times may be long: the machine runs more than it has cores for (the
    one-minute load average), or None when it does not."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return None
    cores = os.cpu_count() or 1
    if load <= cores:
        return None
    return (f"the machine was busy (load {load:.1f} on {cores} cores): run times include "
            f"waiting for a CPU, so compare graphs measured together, not with other runs")


def machine_target(threads: int = DEFAULT_THREADS, measure_if_missing: bool = True) -> Target:
    """The measured target of this machine, measured now when there is none yet."""
    if MACHINE_TARGET in measured_targets():
        return get_target(MACHINE_TARGET)
    if not measure_if_missing:
        raise GraphLabError("this machine has not been measured yet", where=MACHINE_TARGET,
                            hint="run `graphlab targets --measure`")
    return measure_machine(threads)


def measure_machine(threads: int = DEFAULT_THREADS) -> Target:
    """Measure this machine, write its target file and return the target."""
    with tempfile.TemporaryDirectory(prefix="graphlab-measure-") as folder:
        out = Path(folder) / "machine.json"
        command = [sys.executable, "-m", "compiler_core.profiling.machine_child", str(threads),
                   str(out)]
        try:
            done = subprocess.run(command, capture_output=True, text=True,
                                  timeout=MEASURE_TIMEOUT_SECONDS, env=child_environment())
        except subprocess.TimeoutExpired:
            raise GraphLabError(f"measuring this machine took over {MEASURE_TIMEOUT_SECONDS} s",
                                where=MACHINE_TARGET,
                                hint="run it again when the machine is less busy") from None
        if done.returncode != 0 or not out.exists():
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise GraphLabError(f"measuring this machine failed: {last}", where=MACHINE_TARGET,
                                hint="check that onnxruntime runs on this machine")
        measured = json.loads(out.read_text())
    data = target_record(measured, threads)
    target_from_dict(data, MACHINE_TARGET)   # refuses a record a target file cannot hold
    folder = user_targets_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{MACHINE_TARGET}.json"
    partial = path.with_suffix(".part")
    partial.write_text(json.dumps(data, indent=2))
    partial.replace(path)
    return get_target(MACHINE_TARGET)


def target_record(measured: dict, threads: int) -> dict:
    """The target file's fields from the child's measurements and what the OS says."""
    cores, lanes = os.cpu_count() or 1, _simd_lanes()
    clock = _clock_hz()
    cpu = _cpu_name()
    when = datetime.now(timezone.utc).isoformat(timespec="seconds")
    how = measured["how"]
    return {
        "name": MACHINE_TARGET,
        "display_name": f"This machine ({cpu}, {threads} threads), measured",
        "peak_ops_per_s": measured["peak_ops_per_s"],
        "bandwidth_bytes_per_s": measured["bandwidth_bytes_per_s"],
        "sram_bytes": _cache_bytes(),
        "array_rows": cores,
        "array_cols": lanes,
        "clock_hz": clock,
        "notes": (f"Measured on {platform.node() or 'this machine'} ({cpu}) at {when} with "
                  f"{measured['runtime']} and {threads} threads. Peaks: {how['matmul']}. "
                  f"Convolutions: {how['conv']}. Bandwidth: {how['copy']}. Per-op overhead: "
                  f"{how['overhead']}. Not "
                  f"measured: sram_bytes is the largest CPU cache the OS reports; a CPU has "
                  f"no systolic array, so array_rows x array_cols stands for cores x float32 "
                  f"SIMD lanes and clock_hz is the clock the OS reports."),
        "sources": [{"title": "Micro-benchmarks run by graphlab targets --measure",
                     "publication": f"{measured['runtime']} on {cpu}, {when}",
                     "supports": "the peak rate per dtype, the rates of convolutions, the "
                                 "bandwidth, the rate of casts and the per-op overhead"}],
        "measured": {"when": when, "how": "; ".join(f"{k}: {v}" for k, v in how.items()),
                     "threads": threads, "runtime": measured["runtime"],
                     "overhead_seconds_per_op": measured["overhead_seconds_per_op"],
                     "recast_bytes_per_s": measured["recast_bytes_per_s"],
                     "ops_per_s_by_kind": measured["ops_per_s_by_kind"]},
    }


def _cpu_info() -> str:
    try:
        return Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return ""


def _cpu_name() -> str:
    for line in _cpu_info().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown CPU"


def _clock_hz() -> float:
    for line in _cpu_info().splitlines():
        if line.startswith("cpu MHz"):
            return float(line.split(":", 1)[1]) * 1e6
    return 1e9   # the OS does not say: a nominal 1 GHz (the notes say the clock is not measured)


def _simd_lanes() -> int:
    flags = next((line.split(":", 1)[1].split() for line in _cpu_info().splitlines()
                  if line.startswith("flags")), [])
    return next((lanes for flag, lanes in _SIMD_LANES.items() if flag in flags), 1)


def _cache_bytes() -> int:
    """The largest cache of CPU 0, from sysfs ("32768K"); 1 MiB when the OS does not say."""
    sizes = []
    for entry in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = entry.read_text().strip()
        scale = {"K": 1024, "M": 1024 ** 2}.get(text[-1:], 1)
        digits = text.rstrip("KM")
        if digits.isdigit():
            sizes.append(int(digits) * scale)
    return max(sizes, default=1 << 20)
