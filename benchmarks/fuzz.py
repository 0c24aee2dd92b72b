"""Differential fuzzing of the pipeline presets against onnxruntime, at scale.

    python benchmarks/fuzz.py --graphs 5000 [--seed 0] [--presets O2,O2-int8] [--save DIR]

Generates random small models (tests/random_graphs.py), runs every preset on each, and runs the
original and every output in onnxruntime with its optimizer off and at ENABLE_ALL (the default
users get).  Prints, per preset, how many outputs were ok, cleanly refused, crashed, miscompiled
or failed to load at ENABLE_ALL (and how often onnxruntime already failed the original there),
then the first failing cases.  With --save, each failing model (and each model onnxruntime fails
on its own at ENABLE_ALL, to report upstream) is written to DIR with a note of how to reproduce
the failure.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

from differential import FAILURES, ORIGINAL_FAILS, OUTCOMES, PRESETS, check_cases  # noqa: E402
from random_graphs import generate  # noqa: E402

CHUNK = 100  # cases compiled, then run in onnxruntime together


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graphs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--presets", default=",".join(PRESETS))
    parser.add_argument("--save", help="folder for failing models and their reproduction notes")
    parser.add_argument("--show", type=int, default=5, help="failing cases printed")
    args = parser.parse_args(argv)
    presets = args.presets.split(",")
    started = time.perf_counter()
    generated = generate(args.graphs, args.seed)
    counts = {preset: Counter() for preset in presets}
    reported = []
    for first in range(0, len(generated), CHUNK):
        batch = generated[first:first + CHUNK]
        for number, verdicts in enumerate(check_cases(batch, presets), start=first):
            for preset, verdict in verdicts.items():
                counts[preset][verdict.outcome] += 1
                if verdict.outcome in FAILURES + (ORIGINAL_FAILS,):
                    reported.append((number, preset, verdict))
        print(f"  {first + len(batch)} graphs checked ({time.perf_counter() - started:.0f} s)",
              file=sys.stderr)
    print(f"{len(generated)} graphs, seed {args.seed}, "
          f"{time.perf_counter() - started:.0f} s")
    print(f"{'preset':<14}" + "".join(f"{o:>{max(len(o), 6) + 2}}" for o in OUTCOMES))
    for preset in presets:
        print(f"{preset:<14}" + "".join(f"{counts[preset][o]:>{max(len(o), 6) + 2}}"
                                        for o in OUTCOMES))
    for number, preset, verdict in reported[:args.show]:
        print(f"\ncase {number} ({generated[number].describe()})\n  {preset}: "
              f"{verdict.outcome}: {verdict.detail}")
    if args.save:
        save(args.save, generated, reported, args.seed)
    return 1 if any(verdict.outcome in FAILURES for _, _, verdict in reported) else 0


def save(folder: str, generated: list, reported: list, start_seed: int) -> None:
    """Each failing model as case<N>.onnx beside case<N>.json (preset, verdict, dims)."""
    os.makedirs(folder, exist_ok=True)
    by_case: dict[int, list] = {}
    for number, preset, verdict in reported:
        by_case.setdefault(number, []).append({"preset": preset, "outcome": verdict.outcome,
                                               "detail": verdict.detail})
    for number, found in by_case.items():
        case = generated[number]
        stem = os.path.join(folder, f"case{number}")
        with open(stem + ".onnx", "wb") as handle:
            handle.write(case.model.SerializeToString())
        note = {"seed": start_seed, "case": number, "blocks": case.blocks,
                "bindings": case.bindings, "specialize": case.specialize, "reported": found,
                "reproduce": f"graphlab compile {stem}.onnx --pipeline PRESET --verify"
                             + (" --bind " + ",".join(f"{k}={v}" for k, v in
                                                      case.bindings.items())
                                if case.specialize else "")}
        with open(stem + ".json", "w") as handle:
            json.dump(note, handle, indent=2)
    print(f"\n{len(by_case)} failing models saved in {folder}")


if __name__ == "__main__":
    sys.exit(main())
