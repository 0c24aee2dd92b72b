"""Instructions `graphlab compile MODEL -p O2 -o OUT` spends in each phase, counted by
valgrind's cachegrind: the same count whatever else the machine runs (blind to the kernel's
work, such as reading and writing files), so a change of a few percent shows where CPU
seconds on a shared machine cannot tell it from noise.

    python benchmarks/compile_instructions.py MODEL [MODEL ...]

Each phase is the difference of two runs of the command, each ended at once (no exit
clean-up) right after a phase: start-up and imports; reading the model; the representative
sizes (the size walk); the passes, with their snapshots and diffs; and the rest of the
command as it runs (writing, the report and the exit).  The 10k-node graphs of
docs/architecture.md (*Compile time at scale*) are the ones `benchmarks/scale.py --models
10k-chain,10k-scoped` builds into its cache folder.  Bytecode is written and the command run
once first, so no count includes compiling the sources.  Needs `valgrind` on the PATH; one
10k-node run takes about a minute under it.
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
PHASES = ["imports", "read", "sizes", "passes", "full"]
LABELS = {"imports": "start-up and imports", "read": "reading the model",
          "sizes": "representative sizes (the size walk)",
          "passes": "passes, with their snapshots and diffs",
          "full": "writing, the report and the exit"}


def run_stopped(stop: str, model: str, out: str) -> int:
    """The command, ended right after ``stop`` (in the process valgrind counts)."""
    from graphlab.cli import program
    import compiler_core.compilation.compile as compilation
    import graphlab.commands.compile as command

    if stop == "imports":
        os._exit(0)
    where = {"read": (command, "load_edited"), "sizes": (compilation, "decided_for"),
             "passes": (command, "compile_model")}.get(stop)
    if where is not None:
        module, name = where
        original = getattr(module, name)

        def ended_after(*args, **kwargs):
            original(*args, **kwargs)
            os._exit(0)
        setattr(module, name, ended_after)
    return program(["compile", model, "-p", "O2", "-o", out])


def count(stop: str, model: str, out: str, env: dict[str, str]) -> int:
    with tempfile.NamedTemporaryFile(suffix=".log") as log:
        subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                        "--cachegrind-out-file=/dev/null", f"--log-file={log.name}",
                        sys.executable, __file__, "--stop", stop, model, out],
                       env=env, check=True, stdout=subprocess.DEVNULL)
        found = re.search(r"I\s+refs:\s+([\d,]+)", Path(log.name).read_text())
    if found is None:
        raise SystemExit(f"valgrind printed no instruction count for {model} ({stop})")
    return int(found.group(1).replace(",", ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", metavar="MODEL")
    parser.add_argument("--stop", choices=PHASES, help=argparse.SUPPRESS)  # MODEL OUT: a run
    args = parser.parse_args(argv)
    if args.stop:
        model, out = args.models
        return run_stopped(args.stop, model, out)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    table = []
    with tempfile.TemporaryDirectory() as scratch:
        out = str(Path(scratch) / "compiled.onnx")
        for model in args.models:
            subprocess.run([sys.executable, __file__, "--stop", "full", model, out], env=env,
                           check=True, stdout=subprocess.DEVNULL)   # bytecode written
            totals = [count(stop, model, out, env) for stop in PHASES]
            phases = [b - a for a, b in zip([0] + totals, totals)]
            table.append((Path(model).stem, phases, totals[-1]))
    widths = [max(8, len(name) + 2) for name, _, _ in table]
    print(f"{'billions of instructions':<40}" + "".join(
        f"{name:>{width}}" for (name, _, _), width in zip(table, widths)))
    rows = [(LABELS[stop], [phases[i] for _, phases, _ in table])
            for i, stop in enumerate(PHASES)]
    for label, figures in rows + [("the whole command", [t for _, _, t in table])]:
        print(f"{label:<40}" + "".join(f"{f / 1e9:>{width}.2f}"
                                       for f, width in zip(figures, widths)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
