"""Instructions one pass of the scalesim memory replay costs over the 45 layers of
`benchmarks/systolic.py`, counted by valgrind's cachegrind (blind to the machine's load).

    python benchmarks/systolic_instructions.py [--passes N]

Each pass schedules and reports every layer from nothing, as the benchmark's timed runs do.
The figure is (count of N + 1 passes - count of 1 pass) / N, so start-up, imports and the
first pass's warm-up fall out. The hash seed is fixed (unseeded counts differ by 2-4 M) and
OpenBLAS kept to one thread (its idle worker threads spin for a varying count of
instructions); so fixed, two counts agree within 0.1 M. Needs `valgrind`
on the PATH.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # runs from a plain checkout


def run_passes(passes: int) -> None:
    """Schedule and report the benchmark's 45 memory layers `passes` times (the memory
    configurations built once, as the benchmark builds them outside its timed runs)."""
    from benchmarks.systolic import memory_cases, ours_with_memory
    from compiler_core.hardware.systolic.memory_config import MemoryConfig

    cases = [(layer, dataflow, MemoryConfig(sram, words))
             for layer, dataflow, (sram, words) in memory_cases(0)]
    for _ in range(passes):
        for layer, dataflow, memory in cases:
            ours_with_memory(layer, dataflow, memory)


def count(passes: int, env: dict[str, str]) -> int:
    """Instructions of a process that imports the replay and runs `passes` passes."""
    with tempfile.NamedTemporaryFile(suffix=".log") as log:
        subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                        "--cachegrind-out-file=/dev/null", f"--log-file={log.name}",
                        sys.executable, __file__, "--run", str(passes)],
                       env=env, check=True, stdout=subprocess.DEVNULL)
        found = re.search(r"I\s+refs:\s+([\d,]+)", Path(log.name).read_text())
    if found is None:
        raise SystemExit("valgrind printed no instruction count")
    return int(found.group(1).replace(",", ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=8, metavar="N",
                        help="passes counted beyond the first (default 8)")
    parser.add_argument("--run", type=int, help=argparse.SUPPRESS)  # inside valgrind
    args = parser.parse_args(argv)
    if args.run is not None:
        run_passes(args.run)
        return 0
    env = {**os.environ, "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1"}
    run_passes(1)  # bytecode written before anything is counted
    once, more = count(1, env), count(args.passes + 1, env)
    print(f"one pass over the 45 layers: {(more - once) / args.passes / 1e6:.1f} M "
          f"instructions ({args.passes + 1} passes {more / 1e6:,.0f} M, "
          f"1 pass {once / 1e6:,.0f} M)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
