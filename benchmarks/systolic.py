"""Time the systolic simulator's `scalesim` model against real SCALE-Sim 3.0.0.

    python benchmarks/systolic.py [--scalesim-layers N]

Sweeps the first ten convolution layers of ResNet-50 (224x224 input) on 32x32 and 128x128
arrays under all three dataflows (60 schedules), prints each configuration's cycles and the
sweep's time (the goal is under a second), then runs SCALE-Sim on the N smallest layers
(default 1; 0 skips it) in every configuration and prints its time, the speed ratio and
whether the cycle counts agree. The model is unpadded, so each padded layer is listed with
its padded input (224 + 2*3 = 230 for conv1, 56 + 2 = 58 for the 3x3 convs), which gives the
real network's output sizes. (SCALE-Sim's own Resnet50.csv feeds 224 and 56 unpadded.)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runs from a plain checkout

from compiler_core.hardware.systolic import schedule_conv
from compiler_core.hardware.systolic.scalesim_reference import (run_scalesim_conv,
                                                                scalesim_available)

# name, H, W, FH, FW, C (input channels), N (filters), S (stride); H and W include padding
RESNET50_FIRST_TEN = [
    ("conv1 7x7/2", 230, 230, 7, 7, 3, 64, 2),
    ("layer1.0.conv1 1x1", 56, 56, 1, 1, 64, 64, 1),
    ("layer1.0.conv2 3x3", 58, 58, 3, 3, 64, 64, 1),
    ("layer1.0.conv3 1x1", 56, 56, 1, 1, 64, 256, 1),
    ("layer1.0.downsample 1x1", 56, 56, 1, 1, 64, 256, 1),
    ("layer1.1.conv1 1x1", 56, 56, 1, 1, 256, 64, 1),
    ("layer1.1.conv2 3x3", 58, 58, 3, 3, 64, 64, 1),
    ("layer1.1.conv3 1x1", 56, 56, 1, 1, 64, 256, 1),
    ("layer1.2.conv1 1x1", 56, 56, 1, 1, 256, 64, 1),
    ("layer1.2.conv2 3x3", 58, 58, 3, 3, 64, 64, 1),
]
ARRAYS = (32, 128)
DATAFLOWS = ("os", "ws", "is")
CONFIGS = [(size, dataflow) for size in ARRAYS for dataflow in DATAFLOWS]


def ours(layer, size, dataflow):
    _, H, W, FH, FW, C, N, S = layer
    return schedule_conv(H, W, FH, FW, C, N, S, rows=size, cols=size, dataflow=dataflow,
                         timing="scalesim")


def sweep():
    """Schedule and report every layer in every configuration: {(layer, config): cycles}."""
    return {(layer[0], config): ours(layer, *config).report()["cycles"]
            for layer in RESNET50_FIRST_TEN for config in CONFIGS}


def print_sweep_table(cycles):
    labels = [f"{size}x{size} {dataflow}" for size, dataflow in CONFIGS]
    print(f"{'layer':26}" + "".join(f"{label:>14}" for label in labels))
    for layer in RESNET50_FIRST_TEN:
        print(f"{layer[0]:26}" + "".join(f"{cycles[layer[0], c]:>14,}" for c in CONFIGS))
    totals = [sum(cycles[layer[0], c] for layer in RESNET50_FIRST_TEN) for c in CONFIGS]
    print(f"{'total':26}" + "".join(f"{total:>14,}" for total in totals))


def time_sweep(repeats=5):
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        cycles = sweep()
        times.append(time.perf_counter() - started)
    return cycles, min(times)


def compare_with_scalesim(layers):
    print(f"\nSCALE-Sim 3.0.0 on the {len(layers)} smallest layer(s), every configuration:")
    print(f"{'layer':26}{'config':>12}{'SCALE-Sim':>12}{'ours':>12}{'SCALE-Sim s':>13}"
          f"{'ours s':>11}{'ratio':>10}  agree")
    total_reference = total_ours = 0.0
    all_agree = True
    for layer in layers:
        _, H, W, FH, FW, C, N, S = layer
        for size, dataflow in CONFIGS:
            reference = run_scalesim_conv(H, W, FH, FW, C, N, S, size, size, dataflow)
            repeats = 200
            started = time.perf_counter()
            for _ in range(repeats):
                cycles = ours(layer, size, dataflow).report()["cycles"]
            our_seconds = (time.perf_counter() - started) / repeats
            agree = cycles == reference.total_cycles and reference.stall_cycles == 0
            all_agree &= agree
            total_reference += reference.seconds
            total_ours += our_seconds
            print(f"{layer[0]:26}{f'{size}x{size} {dataflow}':>12}{reference.total_cycles:>12,}"
                  f"{cycles:>12,}{reference.seconds:>13.2f}{our_seconds:>11.6f}"
                  f"{reference.seconds / our_seconds:>10,.0f}  {'yes' if agree else 'NO'}")
    print(f"SCALE-Sim {total_reference:.2f} s vs ours {total_ours * 1e3:.3f} ms: "
          f"{total_reference / total_ours:,.0f}x faster; cycle counts "
          f"{'all agree' if all_agree else 'DISAGREE'}")
    return all_agree


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scalesim-layers", type=int, default=1, metavar="N",
                        help="run real SCALE-Sim on the N smallest layers (0 skips it)")
    args = parser.parse_args(argv)

    cycles, seconds = time_sweep()
    print("Cycles (scalesim model) of ResNet-50's first ten conv layers:\n")
    print_sweep_table(cycles)
    print(f"\nSweep of {len(cycles)} schedules: {seconds * 1e3:.1f} ms "
          f"(best of 5; goal < 1 s: {'met' if seconds < 1 else 'MISSED'})")

    if args.scalesim_layers <= 0:
        return 0
    if not scalesim_available():
        print("\nSCALE-Sim is not installed (pip install scalesim==3.0.0): comparison skipped.")
        return 0
    smallest = sorted(RESNET50_FIRST_TEN, key=lambda layer: ours(layer, 32, "os").macs)
    return 0 if compare_with_scalesim(smallest[:args.scalesim_layers]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
