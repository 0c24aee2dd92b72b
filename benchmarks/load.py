"""A class of students on one machine, or on a cluster: how fast are the clicks?

    python benchmarks/load.py [--users 30] [--think 1.0] [--server-processes N]
                              [--servers 2 --workers 2] [--rate-builds 16]

The single-machine mode starts `graphlab serve --no-browser --workers N` (N: the
`--server-processes`, default cores + 1) on a free port with a fresh cache dir.  With
`--servers S --workers W` the same class then runs against a cluster on this machine, on
loopback (`local_cluster`): a redis-server, S `graphlab serve --redis` servers (N / S processes
each) and W `graphlab worker` processes; every action of a student goes to the next server,
as a load balancer without sticky sessions would send it.

Each simulated browser (`dash_client.Tab`: the renderer's real callback requests) opens a
sample (taken in turn, so the first users also start the builds), steps through every pass
and opens every side panel, pausing `--think` seconds (±50 %) between actions like a student
reading.  Prints, mode beside mode, the callback latency (p50 / p95 / max), the errors and the
builds per minute, then the slowest callbacks.  With `--servers`, it then gives 1 .. W workers
the same `--rate-builds` distinct builds at once and prints builds per minute for each: how
build capacity grows with workers.  Targets (the issues): zero errors, p95 <= 1 s on a 2-core
machine, and the cluster on one machine within 1.2x the single machine's p95.
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
from dataclasses import dataclass
from pathlib import Path

import diskcache
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.app import generated_model  # noqa: E402
from benchmarks.dash_client import Tab, Timing  # noqa: E402
from benchmarks.graphlab_page import open_page  # noqa: E402

TABS = "side-tabs"
MODEL = "model-select"
NEXT = "step-next"
PASS_ROW = "pass-row"
RATE_LAYERS = 20   # the build-capacity model: 2,000 nodes, an O2 build of about 3 s


def wait_until(condition, seconds: float, what: str):
    """The first true value of ``condition()``; RuntimeError "``what`` within ``seconds``"
    if none comes in time (a server's start, the tests' waits on its processes)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.1)
    raise RuntimeError(f"{what} within {seconds:g} s")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(workers: int, cache_dir: str, extra: tuple[str, ...] = ()
                 ) -> tuple[subprocess.Popen, str]:
    """`graphlab serve` on a free port (``extra``: more options, e.g. --redis URL)."""
    server, url = launch_server(workers, cache_dir, extra)
    wait_for_server(server, url, cache_dir)
    return server, url


def launch_server(workers: int, cache_dir: str, extra: tuple[str, ...] = (),
                  port: int | None = None) -> tuple[subprocess.Popen, str]:
    """Start it and return at once (several start side by side; then `wait_for_server`);
    on a free port unless ``port`` is given (a server started again where it was)."""
    port = port or free_port()
    command = [sys.executable, "-m", "graphlab", "serve", "--no-browser", "--port", str(port),
               "--workers", str(workers), "--cache-dir", cache_dir, *extra]
    log = Path(cache_dir) / "server.log"   # a file, not a pipe: a full pipe would stall it
    with open(log, "w") as handle:
        server = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT)
    return server, f"http://127.0.0.1:{port}"


def wait_for_server(server: subprocess.Popen, url: str, cache_dir: str) -> None:
    log = Path(cache_dir) / "server.log"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server stopped: {log.read_text()[-2000:]}")
        try:
            if requests.get(f"{url}/_dash-layout", timeout=2).ok:
                return
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


def student(urls: list[str], sample: str, think: float, rng: random.Random) -> Tab:
    """One student's session: open a sample, step through every pass, open every panel; each
    action goes to the next server."""
    turn = iter(range(1 << 30))

    def act(action, *args, **props) -> None:
        time.sleep(think * rng.uniform(0.5, 1.5))
        tab.base_url = urls[next(turn) % len(urls)]
        action(*args, **props)
        tab.settle()

    tab = open_page(urls[0], f"?model={sample}")
    tab.settle()
    for _ in range(len(tab.find(PASS_ROW)) - 1):
        act(tab.click, NEXT)
    for panel in panel_values(tab.layout, TABS):
        act(tab.set, TABS, value=panel)
    tab.close()
    return tab


def run_users(urls: list[str], indices: list[int], samples: list[str], think: float
              ) -> tuple[list[Timing], list[str]]:
    """Some of the class, one thread per student (runs in a client process)."""
    tabs: list[Tab] = []
    failures: list[str] = []

    def one(index: int) -> None:
        try:
            tabs.append(student(urls[index % len(urls):] + urls[:index % len(urls)],
                                samples[index % len(samples)], think, random.Random(index)))
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


@dataclass
class Outcome:
    mode: str
    timings: list[Timing]
    errors: list[str]
    seconds: float
    builds: int


def run_class(mode: str, urls: list[str], args: argparse.Namespace, count_builds) -> Outcome:
    """The whole class, spread over client processes so no one interpreter's lock delays the
    reading of the servers' answers."""
    probe = Tab.open(urls[0])
    samples = [o["value"] for o in probe.get(MODEL, "options") if not o.get("disabled")]
    probe.close()
    before = count_builds()
    started = time.perf_counter()
    processes = args.client_processes
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        parts = pool.starmap(run_users, [(urls, list(range(args.users))[p::processes], samples,
                                          args.think) for p in range(processes)])
    seconds = time.perf_counter() - started
    return Outcome(mode, [t for part, _ in parts for t in part],
                   [e for _, part in parts for e in part], seconds, count_builds() - before)


def single_machine(args: argparse.Namespace) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="graphlab-load-") as cache_dir:
        server, url = start_server(args.server_processes, cache_dir)
        store = diskcache.Cache(os.path.join(cache_dir, "workspaces"))
        try:
            return run_class(f"one machine, 1 server x {args.server_processes}", [url], args,
                             lambda: len(store))
        finally:
            server.terminate()
            try:
                server.wait(timeout=40)
            except subprocess.TimeoutExpired:
                server.kill()


def cluster(args: argparse.Namespace) -> Outcome:
    from benchmarks.local_cluster import start_cluster

    per_server = max(1, args.server_processes // args.servers)
    with tempfile.TemporaryDirectory(prefix="graphlab-load-cluster-") as folder:
        running = start_cluster(folder, args.servers, args.workers, per_server)
        try:
            return run_class(f"Redis/Celery, {args.servers} servers x {per_server}, "
                             f"{args.workers} workers", running.urls, args,
                             running.builds_done)
        finally:
            running.stop()


def build_rates(args: argparse.Namespace) -> tuple[int, list[tuple[int, float]]]:
    """The model's node count and (workers, builds per minute) for 1 .. --workers workers,
    each given the same --rate-builds distinct builds at once: how the build capacity grows
    with the workers.  Each round runs in a fresh process (no workspace of the last round in
    its memory)."""
    model = generated_model(layers=RATE_LAYERS, branches=4, depth=24)
    rates = []
    for workers in range(1, args.workers + 1):
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            rates.append((workers, pool.apply(build_rate, (workers, args.rate_builds,
                                                           model.SerializeToString()))))
    return len(model.graph.node), rates


def build_rate(workers: int, count: int, model: bytes) -> float:
    """Builds per minute of ``workers`` workers given O2 builds of ``count`` copies of
    ``model`` at once, queued as a page queues them.  The copies differ in their doc string
    only: distinct uploads, so distinct builds, of the same cost.  A build is done when its
    workspace is in the shared store."""
    import onnx

    from benchmarks.local_cluster import start_cluster
    from graphlab.app.config import AppConfig
    from graphlab.app.services import Services
    from graphlab.app.workbench import UPLOAD_MODEL

    proto = onnx.load_model_from_string(model)
    with tempfile.TemporaryDirectory(prefix="graphlab-load-rate-") as folder:
        running = start_cluster(folder, servers=0, workers=workers)
        try:
            bench = Services.from_config(AppConfig(cache_dir=os.path.join(folder, "web"),
                                                   redis_url=running.redis_url)).workbench
            jobs = []
            for copy in range(count):
                proto.doc_string = f"copy {copy}"
                upload = bench.sessions.save_upload(f"copy{copy}.onnx", proto.SerializeToString())
                jobs.append(bench.job(bench.source(UPLOAD_MODEL, upload.token), "O2", {}))
            started = time.perf_counter()
            for job in jobs:
                bench.builds.get_or_start(job, grace=0)
            waiting = {job.key for job in jobs}
            while waiting:
                if time.perf_counter() - started > 600:
                    raise RuntimeError(f"{workers} workers did not finish {count} builds in "
                                       f"10 minutes")
                for key in list(waiting):
                    status = bench.builds.status(key)
                    if status is not None and status.state == "failed":
                        raise RuntimeError(f"a build failed: {status.text()}")
                    if key in bench.builds.store:
                        waiting.discard(key)
                time.sleep(0.05)
            return count / (time.perf_counter() - started) * 60
        finally:
            running.stop()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def report_rates(nodes: int, rates: list[tuple[int, float]], builds: int) -> None:
    print(f"build capacity: {builds} distinct O2 builds of a {nodes:,}-node model "
          f"at once, {os.cpu_count()} cores")
    print(f"{'workers':>7s} {'builds/min':>10s} {'x one worker':>12s} {'per worker':>10s}")
    for workers, rate in rates:
        print(f"{workers:7d} {rate:10.1f} {rate / rates[0][1]:12.2f} {rate / workers:10.1f}")


def report(outcomes: list[Outcome], args: argparse.Namespace) -> None:
    print(f"{args.users} users, think time {args.think:g} s, {os.cpu_count()} cores")
    print(f"{'mode':48s} {'callbacks':>9s} {'p50 ms':>7s} {'p95 ms':>7s} {'max ms':>7s} "
          f"{'errors':>6s} {'builds':>6s} {'builds/min':>10s}")
    for o in outcomes:
        latencies = [t.seconds for t in o.timings] or [0.0]
        print(f"{o.mode:48s} {len(o.timings):9,d} {percentile(latencies, 0.5) * 1e3:7.0f} "
              f"{percentile(latencies, 0.95) * 1e3:7.0f} {max(latencies) * 1e3:7.0f} "
              f"{len(o.errors):6d} {o.builds:6d} {o.builds / o.seconds * 60:10.1f}")
    if len(outcomes) == 2:
        single, clustered = ([percentile([t.seconds for t in o.timings] or [0.0], 0.95)
                              for o in outcomes])
        print(f"cluster p95 / single-machine p95: {clustered / max(single, 1e-9):.2f} "
              f"(target <= 1.2)")
    for o in outcomes:
        for error in o.errors[:10]:
            print(f"  error ({o.mode}): {error}")
        by_callback: dict[str, list[float]] = defaultdict(list)
        for t in o.timings:
            by_callback[t.callback].append(t.seconds)
        print(f"slowest callbacks, {o.mode} (p95, p50, count):")
        for name, values in sorted(by_callback.items(),
                                   key=lambda kv: -percentile(kv[1], 0.95))[:5]:
            print(f"  {name:40s} p95 {percentile(values, 0.95) * 1e3:6.0f} ms  "
                  f"p50 {statistics.median(values) * 1e3:5.0f} ms  {len(values):6d}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=30)
    parser.add_argument("--server-processes", type=int, default=(os.cpu_count() or 1) + 1,
                        help="web server processes in all (default: cores + 1)")
    parser.add_argument("--servers", type=int, default=0,
                        help="also run the class on a Redis/Celery cluster of this many "
                             "servers (0: the single-machine mode only)")
    parser.add_argument("--workers", type=int, default=2,
                        help="build workers (`graphlab worker`) of the cluster mode")
    parser.add_argument("--think", type=float, default=1.0,
                        help="mean seconds between a student's actions (0: as fast as possible)")
    parser.add_argument("--rate-builds", type=int, default=16,
                        help="with --servers: distinct builds given at once to 1 .. --workers "
                             "workers, to show how build capacity grows (0: skip)")
    parser.add_argument("--client-processes", type=int, default=os.cpu_count() or 1,
                        help="processes the simulated browsers run in")
    args = parser.parse_args()
    outcomes = [single_machine(args)]
    if args.servers > 0:
        outcomes.append(cluster(args))
    report(outcomes, args)
    if args.servers > 0 and args.rate_builds > 0:
        report_rates(*build_rates(args), args.rate_builds)
    return 0 if not any(o.errors for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
