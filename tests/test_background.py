"""Heavy work happens in builder processes: a build shows its progress, is shared by everyone
who asks for the same content, reports its failure to all of them, and never holds up another
session's clicks."""

from __future__ import annotations

import base64
import functools
import os
import re
import subprocess
import signal
import threading
import time
from pathlib import Path
from collections import OrderedDict
from dataclasses import dataclass

import pytest

from benchmarks.load import wait_until
from compiler_core.errors import GraphLabError
from compiler_core.ir.collection import unfreeze_kept
from graphlab.app import builds, held_workspaces
from graphlab.app.build_launchers import LocalLauncher
from graphlab.app.builds import BuildFailed, BuildJob, Builds, BuildStatus
from graphlab.app.shared_storage import SharedStorage

import bad_models

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


def greedy_build(megabytes: int, on_progress=None) -> int:
    """What a hostile or huge model does to a builder: asks for a lot of memory."""
    return len(bytearray(megabytes << 20))


def dying_build(on_progress=None):
    os.kill(os.getpid(), signal.SIGKILL)   # what the out-of-memory killer does


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
    return Builds(SharedStorage(str(tmp_path / "cache")), ttl_seconds=600, launcher=LocalLauncher())


class Cycle:
    """A workspace's objects reference each other (a node its values, a value its producer)."""

    def __init__(self, nodes: int = 1):
        self.me = self
        self.result = FakeResult(nodes)


@dataclass
class FakeResult:
    """What `workspace_nodes` reads of a pipeline result: graphs with a length."""

    nodes: int

    @property
    def initial(self) -> list:
        return [None] * self.nodes

    snapshots = ()


@pytest.fixture
def held_set(monkeypatch):
    """An empty held set of 10 nodes, and a count of the collections that walk everything."""
    monkeypatch.setattr(held_workspaces, "_held", OrderedDict())
    monkeypatch.setattr(held_workspaces, "_evicted_nodes", 0)
    monkeypatch.setattr(held_workspaces, "NODE_BUDGET", 10)
    full = []
    monkeypatch.setattr(held_workspaces, "unfreeze_kept", lambda: (full.append(1),
                                                                   unfreeze_kept()))
    return full   # what it froze is handed back after the test (conftest)


def test_held_workspaces_are_out_of_the_collectors_sight_and_evicted_ones_are_freed(held_set):
    import gc
    import weakref

    first = Cycle(nodes=10)
    held_workspaces.hold("first", first)
    assert not any(o is first for o in gc.get_objects())   # a full collection skips it
    gone = weakref.ref(first)
    del first
    held_workspaces.hold("second", Cycle(nodes=10))   # evicts the first: its cycle is collected
    assert gone() is None
    assert held_workspaces.held("first") is None and held_workspaces.held("second") is not None


def test_workspaces_are_held_by_their_nodes_and_evictions_do_not_each_walk_everything(
        held_set):
    small = [Cycle(nodes=1) for _ in range(10)]
    for index, workspace in enumerate(small):
        held_workspaces.hold(f"small{index}", workspace)
    assert all(held_workspaces.held(f"small{i}") is small[i] for i in range(10))   # 10 fit
    assert held_set == []
    for index in range(10, 30):   # a class cycling through more than fits: one in, one out
        held_workspaces.hold(f"small{index}", Cycle(nodes=1))
    assert held_workspaces.held("small19") is None and held_workspaces.held("small29")
    # one walk over everything each time the evicted reach half of what is held, not 20
    assert len(held_set) == 4
    held_workspaces.hold("big", Cycle(nodes=50))   # bigger than the budget: held alone
    assert held_workspaces.held("big") and held_workspaces.held("small29") is None


def test_a_slow_build_answers_at_once_and_shows_its_passes(board, tmp_path):
    slow = job(tmp_path, "slow", seconds=3.0)
    status = board.get_or_start(slow)   # returns while the 3 s build is still under way
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
    other_process = Builds(board.storage, ttl_seconds=600, launcher=LocalLauncher())   # another server process's view
    assert isinstance(other_process.get_or_start(same), (BuildStatus, dict))
    wait_for(board, "shared")
    assert builds_logged(tmp_path) == 1


def test_a_failure_reaches_everyone_then_may_be_retried(board, monkeypatch):
    broken = BuildJob("broken", "bad.onnx", failing_build)
    with pytest.raises(GraphLabError, match="bad.onnx: cannot read the model: it is not ONNX"):
        board.get_or_start(broken, grace=10)
    with pytest.raises(GraphLabError, match="not ONNX"):
        Builds(board.storage, ttl_seconds=600, launcher=LocalLauncher()).get_or_start(broken, grace=0)
    monkeypatch.setattr(builds, "OUTCOME_SECONDS", 0.0)
    assert board.get_or_start(broken, grace=0).state == "queued"   # tried again


def test_a_builder_that_dies_is_reported_not_waited_for(board):
    with pytest.raises(BuildFailed, match=r"huge.onnx: the build was killed \(signal 9") as died:
        board.get_or_start(BuildJob("dies", "huge.onnx", dying_build), grace=15)
    assert died.value.retry   # not the build's own doing: the page offers to try again


def test_only_a_failure_not_of_the_builds_own_doing_is_offered_again_and_retried_at_once(
        board, tmp_path):
    with pytest.raises(BuildFailed) as broken:
        board.get_or_start(BuildJob("broken", "bad.onnx", failing_build), grace=10)
    assert not broken.value.retry   # the same model fails the same way again
    lost = job(tmp_path, "lost", seconds=0.1)
    board.publish(BuildStatus("lost", "toy model", "failed", retry=True,
                              message="the build lost its worker 2 times"))
    with pytest.raises(BuildFailed, match="lost its worker") as failed:
        board.get_or_start(lost, grace=0)   # within a minute: everyone hears the failure
    assert failed.value.retry and failed.value.key == "lost"
    board.forget_failure("lost")            # the user clicked "Try again"
    assert board.get_or_start(lost, grace=10)["built_by"] != os.getpid()
    assert builds_logged(tmp_path) == 1


def test_a_build_whose_builder_fell_silent_is_taken_over(board, tmp_path):
    board.publish(BuildStatus("silent", "toy model", "running", stage="pass 1 of 6: x"))
    record = board.board.get("silent")
    board.board.set("silent", {**record, "updated": time.time() - builds.STALE_SECONDS - 1})
    assert board.get_or_start(job(tmp_path, "silent", seconds=0.2), grace=0).state == "queued"
    wait_for(board, "silent")
    assert builds_logged(tmp_path) == 1


def test_builders_are_limited_and_the_rest_wait(board, tmp_path, monkeypatch):
    monkeypatch.setattr(builds, "MAX_RUNNING", 1)
    first = board.get_or_start(job(tmp_path, "first", seconds=2.0), grace=0)
    second = board.get_or_start(job(tmp_path, "second", seconds=0.1), grace=0)
    assert first.state == "queued" and second.state == "waiting"
    assert "waiting for a free builder (1 build running)" in second.text()
    wait_for(board, "first")   # its workspace is stored a moment before its record says done
    wait_until(lambda: board.status("first").state == "done", 30, "the first build never ended")
    assert isinstance(board.get_or_start(job(tmp_path, "second", seconds=0.1), grace=10), dict)


# ---- the app under gunicorn: two browsers, one of them waiting for a long build ------------

SLOW_PIPELINE = "clean,test_take_some_time"  # a plugin pass that waits 8 s
SLOW_PLUGIN = Path(__file__).with_name("slow_passes.py")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`graphlab serve --workers 2`: any request may land on either worker."""
    from benchmarks.load import start_server

    process, url = start_server(2, str(tmp_path_factory.mktemp("cache")),
                                ("--plugins", str(SLOW_PLUGIN)))
    yield url
    process.terminate()  # gunicorn lets in-flight requests finish for its graceful timeout (30 s)
    try:
        process.wait(timeout=40)
    except subprocess.TimeoutExpired:  # a loaded machine: stop waiting for the slow build
        process.kill()
        process.wait(timeout=10)


def test_a_long_build_does_not_hold_up_another_session(server):
    from benchmarks.graphlab_page import open_page

    stepping = open_page(server, "?model=teach_conv_bn")
    stepping.settle()
    title = stepping.get("pane-before-title", "children")   # the first pass that changed it
    first = int(re.match(r"Before pass (\d+):", title).group(1))

    waiting = open_page(server, f"?model=gpt2_tiny&pipeline={SLOW_PIPELINE}")
    assert waiting.get("view-state", "data") is None            # no view until it is built
    assert waiting.get("build-pending", "data")["view"]["model"] == "gpt2_tiny"
    assert waiting.get("build-poll", "disabled") is False

    for _ in range(5):
        stepping.click("step-next")
    assert f"Before pass {first + 5}:" in stepping.get("pane-before-title", "children")
    waiting.set("build-poll", n_intervals=1)                    # one tick of its poll
    progress = str(waiting.get("build-progress", "children"))
    # the other session's five steps were all answered while the build was still running
    assert ("Building gpt2_tiny: " in progress
            or "gpt2_tiny: starting the build" in progress), progress

    waiting.settle(limit=180)
    assert "(578 nodes)" in waiting.get("pane-before-title", "children")
    assert "model=gpt2_tiny" in waiting.get("url", "search")
    assert not stepping.errors and not waiting.errors


def test_an_upload_the_importer_refuses_leaves_the_view_as_it_was(server):
    from benchmarks.graphlab_page import open_page

    tab = open_page(server, "?model=teach_gelu")
    tab.settle()
    data = base64.b64encode(bad_models.cycle().SerializeToString()).decode()
    tab.set("model-upload", contents=f"data:application/octet-stream;base64,{data}",
            filename="cyclic.onnx")
    tab.settle()
    message = str(tab.get("nav-message", "children"))
    assert "cyclic.onnx: " in message and "cycle" in message
    assert tab.get("view-state", "data")["model"] == "teach_gelu"
    assert tab.get("model-select", "value") == "teach_gelu"


def test_a_build_over_its_time_limit_is_stopped_with_a_message(tmp_path):
    limited = Builds(SharedStorage(str(tmp_path / "cache")), ttl_seconds=600, time_limit=1,
                     launcher=LocalLauncher())
    with pytest.raises(GraphLabError, match=r"toy model: the build took longer than its 1 s "
                                            r"limit and was stopped"):
        limited.get_or_start(job(tmp_path, "endless", seconds=30.0), grace=20)
    assert limited.ready("endless") is None


def test_a_build_over_its_memory_limit_is_stopped_with_a_message(tmp_path):
    limited = Builds(SharedStorage(str(tmp_path / "cache")), ttl_seconds=600, memory_mb=64,
                     launcher=LocalLauncher())
    greedy = BuildJob("greedy", "greedy model", functools.partial(greedy_build, 512))
    with pytest.raises(GraphLabError, match=r"greedy model: the build needed more than its 64 MB "
                                            r"memory limit and was stopped \(pick a smaller"):
        limited.get_or_start(greedy, grace=20)
    modest = BuildJob("modest", "modest model", functools.partial(greedy_build, 16))
    assert limited.get_or_start(modest, grace=20) == 16 << 20   # within the limit: built
