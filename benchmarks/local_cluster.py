"""A whole cluster on this machine, on loopback: a redis-server, `graphlab serve --redis`
processes, `graphlab worker` processes and a round-robin balancer in front of the servers —
what the cluster tests and `load.py` run.

Every process writes its log to a file in the folder given (a pipe nobody reads would stall
it) and is stopped by its own process id.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import redis

from benchmarks.load import free_port, launch_server, wait_for_server, wait_until
from benchmarks.round_robin import RoundRobin

START_SECONDS = 60


@dataclass
class LocalCluster:
    folder: Path
    redis_port: int
    redis: subprocess.Popen | None = None
    servers: list[tuple[subprocess.Popen, str]] = field(default_factory=list)
    workers: list[subprocess.Popen] = field(default_factory=list)
    balancer: RoundRobin | None = None
    server_processes: int = 1

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    @property
    def urls(self) -> list[str]:
        return [url for _, url in self.servers]

    def start_redis(self) -> None:
        """redis-server without persistence, on this cluster's port (again after a stop)."""
        log = open(self.folder / "redis.log", "a")
        self.redis = subprocess.Popen(
            ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", str(self.folder)],
            stdout=log, stderr=subprocess.STDOUT)
        client = redis.Redis(port=self.redis_port, socket_connect_timeout=1)
        wait_until(lambda: _answers(client), START_SECONDS, "no answer from redis-server")

    def stop_redis(self) -> None:
        _stop(self.redis)
        self.redis = None

    def start_worker(self, concurrency: int = 1) -> subprocess.Popen:
        self.workers.append(self._launch_worker(len(self.workers), concurrency))
        return self.workers[-1]

    def _launch_worker(self, index: int, concurrency: int) -> subprocess.Popen:
        with open(self.folder / f"worker{index}.log", "a") as log:
            return subprocess.Popen(
                [sys.executable, "-m", "graphlab", "worker", "--redis", self.redis_url,
                 "--concurrency", str(concurrency)], stdout=log, stderr=subprocess.STDOUT)

    def start_servers(self, count: int, processes: int = 1) -> None:
        """Start ``count`` servers side by side, then wait until each answers."""
        self.server_processes = processes
        started = []
        for _ in range(count):
            cache = self.folder / f"server{len(self.servers)}"
            cache.mkdir()
            self.servers.append(launch_server(processes, str(cache), ("--redis", self.redis_url)))
            started.append((*self.servers[-1], str(cache)))
        for process, url, cache in started:
            wait_for_server(process, url, cache)

    def start_balancer(self) -> str:
        """A round-robin balancer over the servers; its URL."""
        self.balancer = RoundRobin(self.urls).start()
        return self.balancer.url

    def revive(self) -> None:
        """Start again whatever a fault test stopped: Redis, servers (on their own ports, so
        the balancer finds them), workers (one build at a time)."""
        if self.redis is None:
            self.start_redis()
        restarted = []
        for index, (process, url) in enumerate(self.servers):
            if process.poll() is not None:
                port = int(url.rsplit(":", 1)[1])
                # A killed server's gunicorn workers answer on its port until they notice
                # (a second or so): a server started meanwhile would look up at once, then
                # refuse connections while it waits for the port.
                wait_until(lambda: not listening(port), START_SECONDS,
                           f"port {port} of the killed server not closed")
                cache = str(self.folder / f"server{index}")
                self.servers[index] = launch_server(
                    self.server_processes, cache, ("--redis", self.redis_url), port=port)
                restarted.append((*self.servers[index], cache))
        for process, url, cache in restarted:
            wait_for_server(process, url, cache)
        for index, worker in enumerate(self.workers):
            if worker.poll() is not None:
                self.workers[index] = self._launch_worker(index, 1)
        self.wait_for_workers()

    def wait_for_workers(self) -> None:
        from graphlab.app.cluster import live_workers

        expected = sum(1 for w in self.workers if w.poll() is None)
        wait_until(lambda: len(live_workers(self.redis_url)) >= expected, START_SECONDS,
                   "not all workers announced")

    def worker_log(self) -> str:
        return "".join((self.folder / f"worker{i}.log").read_text()
                       for i in range(len(self.workers)))

    def builds_done(self) -> int:
        """Builds the workers finished (each logs one line)."""
        return self.worker_log().count("graphlab build done: ")

    def stop(self) -> None:
        if self.balancer is not None:
            self.balancer.stop()
        for process, _ in self.servers:
            _stop(process)
        for worker in self.workers:
            _stop(worker)
        self.stop_redis()


def start_cluster(folder: str, servers: int, workers: int, server_processes: int = 1,
                  worker_concurrency: int = 1) -> LocalCluster:
    """Redis, then the workers and servers (servers start while the workers do)."""
    if shutil.which("redis-server") is None:
        raise RuntimeError("redis-server is not installed (Debian: apt-get install redis-server)")
    cluster = LocalCluster(Path(folder), free_port())
    try:
        cluster.start_redis()
        for _ in range(workers):
            cluster.start_worker(worker_concurrency)
        cluster.start_servers(servers, server_processes)
        cluster.wait_for_workers()
    except BaseException:
        cluster.stop()
        raise
    return cluster


def listening(port: int) -> bool:
    """Whether something accepts connections on this loopback port."""
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False




def _stop(process: subprocess.Popen | None) -> None:
    """SIGTERM, then SIGKILL if it lingers (a Celery worker finishes its task first)."""
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
