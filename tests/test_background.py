"""Heavy work happens in builder processes: a build shows its progress, is shared by everyone
who asks for the same content, reports its failure to all of them, and never holds up another
session's clicks."""

from __future__ import annotations

import functools
import os
import threading
import time

import pytest

from compiler_core.errors import GraphLabError
from graphlab.app import builds
from graphlab.app.builds import BuildJob, Builds, BuildStatus

PASSES = 6


def counted_build(folder: str, seconds: float, on_progress=None) -> dict:
    """A stand-in for a pipeline: writes a line per build, reports its passes, takes time."""
    with open(os.path.join(folder, "builds.log"), "a") as log:
        log.write(f"{os.getpid()}\n")
    for index in range(PASSES):
        if on_progress:
            on_progress(index, PASSES, f"step_{index}")
        time.sleep(seconds / PASSES)
    return {"built_by": os.getpid()}


def failing_build(on_progress=None):
    raise GraphLabError("cannot read the model: it is not ONNX")


def dying_build(on_progress=None):
    os._exit(9)   # what the out-of-memory killer looks like from outside


def job(tmp_path, key: str, seconds: float) -> BuildJob:
    return BuildJob(key, "toy model", functools.partial(counted_build, str(tmp_path), seconds))


def builds_logged(tmp_path) -> int:
    log = tmp_path / "builds.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def wait_for(builds_: Builds, key: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = builds_.ready(key)
        if found is not None:
            return found
        time.sleep(0.05)
    raise AssertionError(f"{key} was not built within {timeout} s")


@pytest.fixture
def board(tmp_path):
    return Builds(str(tmp_path / "cache"), ttl_seconds=600)


def test_a_slow_build_answers_at_once_and_shows_its_passes(board, tmp_path):
    slow = job(tmp_path, "slow", seconds=3.0)
    started = time.perf_counter()
    status = board.get_or_start(slow)
    assert time.perf_counter() - started < 1.5
    assert isinstance(status, BuildStatus) and status.state in ("queued", "running")
    stages = set()
    while board.ready("slow") is None:
        current = board.status("slow")
        if current is not None:
            stages.add(current.text())
        time.sleep(0.05)
    assert any(text.startswith("Building toy model: pass ") and f" of {PASSES}: step_" in text
               for text in stages), stages
    assert board.get_or_start(slow)["built_by"] != os.getpid()


def test_everyone_asking_for_the_same_content_shares_one_build(board, tmp_path):
    same = job(tmp_path, "shared", seconds=1.0)
    answers = []
    threads = [threading.Thread(target=lambda: answers.append(board.get_or_start(same)))
               for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    other_process = Builds(board.directory, ttl_seconds=600)   # another server process's view
    assert isinstance(other_process.get_or_start(same), (BuildStatus, dict))
    wait_for(board, "shared")
    assert builds_logged(tmp_path) == 1


def test_a_failure_reaches_everyone_then_may_be_retried(board, monkeypatch):
    broken = BuildJob("broken", "bad.onnx", failing_build)
    with pytest.raises(GraphLabError, match="bad.onnx: cannot read the model: it is not ONNX"):
        board.get_or_start(broken, grace=10)
    with pytest.raises(GraphLabError, match="not ONNX"):
        Builds(board.directory, ttl_seconds=600).get_or_start(broken, grace=0)
    monkeypatch.setattr(builds, "OUTCOME_SECONDS", 0.0)
    assert board.get_or_start(broken, grace=0).state == "queued"   # tried again


def test_a_builder_that_dies_is_reported_not_waited_for(board):
    with pytest.raises(GraphLabError, match="stopped unexpectedly"):
        board.get_or_start(BuildJob("dies", "huge.onnx", dying_build), grace=15)


def test_a_build_whose_builder_fell_silent_is_taken_over(board, tmp_path):
    board.publish(BuildStatus("silent", "toy model", "running", stage="pass 1 of 6: x"))
    record = board.board.get("silent")
    board.board.set("silent", {**record, "updated": time.time() - builds.STALE_SECONDS - 1})
    assert board.get_or_start(job(tmp_path, "silent", seconds=0.2)).state in ("queued", "running")
    wait_for(board, "silent")
    assert builds_logged(tmp_path) == 1


def test_builders_are_limited_and_the_rest_wait(board, tmp_path, monkeypatch):
    monkeypatch.setattr(builds, "MAX_RUNNING", 1)
    first = board.get_or_start(job(tmp_path, "first", seconds=2.0), grace=0)
    second = board.get_or_start(job(tmp_path, "second", seconds=0.1), grace=0)
    assert first.state == "queued" and second.state == "waiting"
    assert "waiting for a free builder (1 build running)" in second.text()
    wait_for(board, "first")
    assert isinstance(board.get_or_start(job(tmp_path, "second", seconds=0.1), grace=10), dict)
