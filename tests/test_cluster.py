"""`graphlab serve --redis` with the real parts (the `cluster` fixture): a redis-server on a
loopback port, two servers and two Celery workers (`graphlab worker`); a session whose clicks
alternate between the servers, an upload made on one server and used on the other, and the
faults a class meets — a worker killed mid-build, Redis gone for a while, a build past its time
or memory limit, a server killed."""

from __future__ import annotations

import base64
import os
import re
import signal
import threading
import time

from benchmarks.dash_client import Tab
from benchmarks.graphlab_page import open_page
from benchmarks.load import wait_until
from compiler_core.errors import GraphLabError
from graphlab.app.build_launchers import launcher_for
from graphlab.app.builds import Builds
from graphlab.app.shared_storage import SharedStorage

import bad_models

# gpt2_tiny: a build of a few seconds, long enough to kill mid-way (passes that change nothing
# are cheap, but their patterns are still matched)
SLOW = ",".join(["O2"] * 120)
BANNER_POLL = "service-banner-poll"


def board(cluster) -> Builds:
    storage = SharedStorage(str(cluster.folder), cluster.redis_url)
    return Builds(storage, ttl_seconds=600, launcher=launcher_for(storage))


def pass_number(tab: Tab) -> int:
    return int(re.match(r"Before pass (\d+):", tab.get("pane-before-title", "children")).group(1))


def failure_of(services, state) -> str:
    """What the user's next poll says once the view's build failed."""
    def failed():
        try:
            services.workspace_or_build(state, None)
        except GraphLabError as err:
            return str(err)
        return None
    return wait_until(failed, 60, "the build was not stopped")


def test_a_session_whose_clicks_alternate_between_servers_sees_one_view(cluster):
    first, second = cluster.urls
    tab = open_page(first, "?model=teach_conv_bn&pipeline=O2")
    tab.settle()
    start = pass_number(tab)
    for click in range(4):
        tab.base_url = (second, first)[click % 2]   # the load balancer's choice
        tab.click("step-next")
        tab.settle()
        assert pass_number(tab) == start + click + 1
    same = open_page(first, tab.get("url", "search"))   # the URL alone names the view
    assert same.get("pane-before-title", "children") == tab.get("pane-before-title", "children")
    assert not tab.errors and not same.errors


def test_the_same_request_on_both_servers_is_built_once(cluster):
    before = cluster.builds_done()
    search = "?model=teach_gelu&pipeline=O1,clean"
    tabs: list[Tab] = []
    threads = [threading.Thread(target=lambda url=url: tabs.append(open_page(url, search)))
               for url in cluster.urls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for tab in tabs:
        tab.settle()
    assert {tab.get("pane-before-title", "children") for tab in tabs} != {None}
    assert len({tab.get("pane-before-title", "children") for tab in tabs}) == 1
    wait_until(lambda: cluster.builds_done() == before + 1, 10, "one build logged")
    time.sleep(1)
    assert cluster.builds_done() == before + 1


def test_an_upload_on_one_server_is_built_by_a_worker_and_compared_on_the_other(cluster):
    first, second = cluster.urls
    tab = open_page(first, "?model=teach_conv_bn&pipeline=O2")
    tab.settle()
    data = base64.b64encode(bad_models.good_bytes()).decode()   # content no other test builds
    before = cluster.builds_done()
    tab.set("model-upload", contents=f"data:application/octet-stream;base64,{data}",
            filename="mine.onnx")
    tab.settle()
    assert tab.get("view-state", "data")["model"] == "upload"
    assert "model=upload" in tab.get("url", "search")
    tab.base_url = second            # the upload's bytes are in Redis, by their sha256
    tab.set("compare-versus", value="onnxruntime:basic")
    tab.settle()
    assert tab.get("pane-before-title", "children").startswith("A: mine.onnx")
    assert tab.get("pane-after-title", "children").startswith("B: onnxruntime basic")
    wait_until(lambda: cluster.builds_done() == before + 2, 10,   # the view, the comparison
               "two builds logged")
    assert not tab.errors


def test_a_worker_killed_mid_build_hands_it_to_another(cluster):
    tab = open_page(cluster.urls[0], f"?model=gpt2_tiny&pipeline={SLOW}")
    key = tab.get("build-pending", "data")["key"]
    running = wait_until(lambda: (s := board(cluster).status(key)) and s.state == "running"
                         and s.step >= 2 and s, 60, "the build did not reach its passes")
    killed = int(re.match(r"pid (\d+) on ", running.builder).group(1))
    os.kill(killed, signal.SIGKILL)
    tab.settle(limit=120)
    assert "(578 nodes)" in tab.get("pane-before-title", "children")
    done = board(cluster).status(key)
    assert done.state == "done" and done.attempt == 2 and done.builder != running.builder
    assert not tab.errors


def test_a_build_that_lost_its_workers_twice_says_so_and_offers_to_try_again(cluster):
    tab = open_page(cluster.urls[0], f"?model=gpt2_tiny&pipeline={SLOW},clean")
    key = tab.get("build-pending", "data")["key"]
    for attempt in (1, 2):
        running = wait_until(lambda: (s := board(cluster).status(key)) and s.state == "running"
                             and s.attempt == attempt and s.step >= 2 and s, 60,
                             f"attempt {attempt} did not reach its passes")
        os.kill(int(re.match(r"pid (\d+) on ", running.builder).group(1)), signal.SIGKILL)
    tab.settle(limit=120)
    message = str(tab.get("nav-message", "children"))
    assert "gpt2_tiny: the build lost its worker 2 times" in message
    assert tab.get("view-state", "data")["model"] != "gpt2_tiny"   # the view stayed usable
    retry, = tab.find("build-retry")
    tab.base_url = cluster.urls[1]   # the click may reach the other server
    tab.click(retry)
    tab.settle(limit=120)
    assert "(578 nodes)" in tab.get("pane-before-title", "children")
    assert board(cluster).status(key).attempt == 1   # a fresh build, not a third attempt
    assert not tab.errors


def test_a_build_past_its_time_limit_is_stopped_on_the_worker(cluster, tmp_path):
    import onnx

    from benchmarks.generated_graphs import element_wise_chain
    from graphlab.app.config import AppConfig
    from graphlab.app.services import Services
    from graphlab.app.view_state import ViewState

    # 20,000 nodes: importing and checking them alone takes longer than 1 s on any machine
    # (a small model's build, however many passes it repeats, can finish within the limit)
    path = tmp_path / "long_chain.onnx"
    onnx.save(element_wise_chain(20_000), str(path))
    services = Services.from_config(AppConfig(cache_dir=str(cluster.folder / "limited"),
                                              redis_url=cluster.redis_url,
                                              extra_model_path=str(path), build_seconds=1))
    wanted = ViewState(model="long_chain.onnx", pipeline="O2")
    assert failure_of(services, wanted) == ("long_chain.onnx: the build took longer than its 1 s "
                             "limit and was stopped (pick a smaller model or fewer passes, or "
                             "ask the operator for a longer --build-seconds)")


def test_a_build_over_its_memory_limit_is_stopped_and_the_worker_lives_on(cluster, tmp_path):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from graphlab.app.config import AppConfig
    from graphlab.app.services import Services
    from graphlab.app.view_state import ViewState
    from graphlab.app.workbench import Workspace

    # Folding the BatchNorm into the Conv computes new 128 MB weights (mapped weights the
    # build only reads do not count against the limit)
    channels, width = 4096, 8192
    weights = [numpy_helper.from_array(np.zeros((channels, width, 1, 1), np.float32), "w")] + [
        numpy_helper.from_array(np.ones(channels, np.float32), name)
        for name in ("scale", "bias", "mean", "var")]
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["conv"], name="conv"),
         helper.make_node("BatchNormalization", ["conv", "scale", "bias", "mean", "var"], ["y"],
                          name="bn")], "heavy",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width, 1, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, channels, 1, 1])], weights)
    path = tmp_path / "heavy.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    services = Services.from_config(AppConfig(
        cache_dir=str(cluster.folder / "small"), redis_url=cluster.redis_url,
        extra_model_path=str(path), build_memory_mb=64))
    assert failure_of(services, ViewState(model="heavy.onnx", pipeline="O2")) == ("heavy.onnx: the build needed more than its 64 MB memory limit and "
                             "was stopped (pick a smaller model or fewer passes, or ask the "
                             "operator for a larger --build-memory-mb)")
    assert all(worker.poll() is None for worker in cluster.workers)
    light = ViewState(model="teach_gelu", pipeline="clean")
    wait_until(lambda: isinstance(services.workspace_or_build(light, None), Workspace), 60,
               "a build after it did not finish")


def test_redis_away_shows_a_banner_and_the_app_recovers_by_itself(cluster):
    tab = open_page(cluster.urls[0], "?model=teach_conv_bn&pipeline=O2")
    tab.settle()
    step = pass_number(tab)
    cluster.stop_redis()
    try:
        tab.set(BANNER_POLL, n_intervals=1)
        assert "the shared cache at redis://127.0.0.1:" in str(tab.get("service-banner",
                                                                       "children"))
        tab.click("step-next")            # a view this server holds still answers
        assert pass_number(tab) == step + 1
        tab.set("model-select", value="teach_gelu")   # one it must read from Redis waits
        # (no other test opens teach_gelu's default view: no server holds it in memory)
        assert "cannot be reached" in str(tab.get("nav-message", "children"))
        assert tab.get("build-pending", "data")["view"]["model"] == "teach_gelu"
    finally:
        cluster.start_redis()
    tab.settle(limit=60)
    assert tab.get("view-state", "data")["model"] == "teach_gelu"
    assert not tab.get("nav-message", "children")

    def banner_gone():
        tab.set(BANNER_POLL, n_intervals=(tab.get(BANNER_POLL, "n_intervals") or 0) + 1)
        return tab.get("service-banner", "children") is None
    wait_until(banner_gone, 20, "the banner stayed")
    assert not tab.errors   # no request failed, not even while Redis was away


def test_a_server_killed_mid_session_the_other_shows_the_same_view(cluster):
    first, second = cluster.urls
    tab = open_page(first, "?model=teach_conv_bn&pipeline=O2")
    tab.settle()
    tab.click("step-next")
    step = pass_number(tab)
    process = cluster.servers[0][0]
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    tab.base_url = second
    reopened = open_page(second, tab.get("url", "search"))
    assert pass_number(reopened) == step
    tab.click("step-next")
    assert pass_number(tab) == step + 1
    assert not tab.errors and not reopened.errors
