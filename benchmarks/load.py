"""A class of students on one server: how fast are the clicks?

    python benchmarks/load.py [--users 30] [--workers N] [--think 1.0]

Starts `graphlab serve --no-browser --workers N` on a free port with a fresh cache dir, then
30 simulated browsers (`dash_client.Tab`: the renderer's real callback requests) each open a
sample (the samples taken in turn, so the first users also start the builds), step through
every pass and open every side panel, pausing `--think` seconds (±50 %) between actions like a
student reading.  Prints the callback latency (p50 / p95 / max), the errors, and which
callbacks are slowest.  Target (the issue): zero errors and p95 <= 1 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.dash_client import Tab, Timing  # noqa: E402
from benchmarks.graphlab_page import clientside  # noqa: E402

TABS = "side-tabs"
MODEL = "model-select"
NEXT = "step-next"
PASS_ROW = "pass-row"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(workers: int, cache_dir: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    command = [sys.executable, "-m", "graphlab", "serve", "--no-browser", "--port", str(port),
               "--workers", str(workers), "--cache-dir", cache_dir]
    log = Path(cache_dir) / "server.log"   # a file, not a pipe: a full pipe would stall it
    with open(log, "w") as handle:
        server = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server stopped: {log.read_text()[-2000:]}")
        try:
            if requests.get(f"{url}/_dash-layout", timeout=2).ok:
                return server, url
        except requests.RequestException:
            pass
        time.sleep(0.3)
    server.kill()
    raise RuntimeError("the server did not answer within 120 s")


def panel_values(layout: dict, tabs_id: str) -> list[str]:
    """The values of the dcc.Tab children of the Tabs component ``tabs_id``."""
    found: list[str] = []

    def walk(node) -> None:
        if isinstance(node, list):
            for child in node:
                walk(child)
        elif isinstance(node, dict) and "props" in node:
            props = node["props"]
            if props.get("id") == tabs_id:
                found.extend(c["props"]["value"] for c in props.get("children", [])
                             if isinstance(c, dict) and "value" in c.get("props", {}))
                return
            for value in props.values():
                if isinstance(value, (dict, list)):
                    walk(value)

    walk(layout)
    return found


def student(url: str, sample: str, think: float, rng: random.Random) -> Tab:
    """One student's session: open a sample, step through every pass, open every panel."""
    def pause() -> None:
        time.sleep(think * rng.uniform(0.5, 1.5))

    tab = Tab.open(url, f"?model={sample}", clientside=clientside())
    tab.settle()
    for _ in range(len(tab.find(PASS_ROW)) - 1):
        pause()
        tab.click(NEXT)
        tab.settle()
    for panel in panel_values(tab.layout, TABS):
        pause()
        tab.set(TABS, value=panel)
        tab.settle()
    tab.close()
    return tab


def run_users(url: str, indices: list[int], samples: list[str], think: float
              ) -> tuple[list[Timing], list[str]]:
    """Some of the class, one thread per student (runs in a client process)."""
    tabs: list[Tab] = []
    failures: list[str] = []

    def one(index: int) -> None:
        try:
            tabs.append(student(url, samples[index % len(samples)], think, random.Random(index)))
        except Exception as err:  # noqa: BLE001 - a crashed session counts as an error
            failures.append(f"user {index}: {type(err).__name__}: {err}")

    threads = []
    for index in indices:
        threads.append(threading.Thread(target=one, args=(index,)))
        threads[-1].start()
        time.sleep(0.1)   # the class does not open the page in the same millisecond
    for thread in threads:
        thread.join()
    return [t for tab in tabs for t in tab.timings], failures + [e for t in tabs for e in t.errors]


def run_class(url: str, users: int, think: float, processes: int
              ) -> tuple[list[Timing], list[str], float]:
    """The whole class, spread over client processes so no one interpreter's lock delays the
    reading of the server's answers."""
    probe = Tab.open(url)
    samples = [o["value"] for o in probe.get(MODEL, "options") if not o.get("disabled")]
    probe.close()
    started = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        parts = pool.starmap(run_users, [(url, list(range(users))[p::processes], samples, think)
                                         for p in range(processes)])
    timings = [t for part, _ in parts for t in part]
    errors = [e for _, part in parts for e in part]
    return timings, errors, time.perf_counter() - started


def children_cpu() -> float:
    """CPU seconds of the child processes waited for so far (the server counts its workers
    and builders once it is stopped)."""
    times = os.times()
    return times.children_user + times.children_system


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def report(timings: list[Timing], errors: list[str], seconds: float, cpu: dict[str, float],
           args: argparse.Namespace) -> None:
    latencies = [t.seconds for t in timings]
    print(f"{args.users} users, think time {args.think:g} s, {args.workers} server worker(s), "
          f"{os.cpu_count()} cores: {len(timings):,} callbacks in {seconds:.1f} s "
          f"({len(timings) / seconds:.0f}/s)")
    print(f"callback latency: p50 {percentile(latencies, 0.5) * 1e3:.0f} ms, "
          f"p95 {percentile(latencies, 0.95) * 1e3:.0f} ms, max {max(latencies) * 1e3:.0f} ms; "
          f"errors: {len(errors)}")
    print("CPU seconds: " + ", ".join(f"{name} {value:.1f}" for name, value in cpu.items())
          + f" (of {seconds * (os.cpu_count() or 1):.0f} available)")
    for error in errors[:10]:
        print(f"  error: {error}")
    by_callback: dict[str, list[float]] = defaultdict(list)
    for t in timings:
        by_callback[t.callback].append(t.seconds)
    print("slowest callbacks (p95, p50, count):")
    for name, values in sorted(by_callback.items(), key=lambda kv: -percentile(kv[1], 0.95))[:8]:
        print(f"  {name:40s} p95 {percentile(values, 0.95) * 1e3:6.0f} ms  "
              f"p50 {statistics.median(values) * 1e3:5.0f} ms  {len(values):6d}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=30)
    parser.add_argument("--workers", type=int, default=(os.cpu_count() or 1) + 1,
                        help="server worker processes (default: cores + 1)")
    parser.add_argument("--think", type=float, default=1.0,
                        help="mean seconds between a student's actions (0: as fast as possible)")
    parser.add_argument("--client-processes", type=int, default=os.cpu_count() or 1,
                        help="processes the simulated browsers run in")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="graphlab-load-") as cache_dir:
        server, url = start_server(args.workers, cache_dir)
        try:
            start = children_cpu()
            timings, errors, seconds = run_class(url, args.users, args.think,
                                                 args.client_processes)
            clients = children_cpu() - start
        finally:
            server.terminate()
            server.wait(timeout=30)
    report(timings, errors, seconds,
           {"server": children_cpu() - start - clients, "simulated browsers": clients}, args)
    return 0 if not errors else 1


if __name__ == "__main__":
    sys.exit(main())
