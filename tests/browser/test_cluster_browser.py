"""A pass-debugger session in a real browser behind a round-robin balancer over two
`serve --redis` servers (the `cluster` fixture): every click's callbacks are spread over both
servers, and when one of them is killed mid-session the other answers the next click."""

from __future__ import annotations

import os
import re
import signal
from collections import Counter

import pytest

from pane_helpers import wait_for_nodes

pytestmark = pytest.mark.browser

TITLE = "#pane-before-title"


def pass_number(browser) -> int:
    return int(re.match(r"Before pass (\d+):", browser.find_element(TITLE).text).group(1))


def step_to(browser, number: int) -> None:
    browser.find_element("#step-next").click()
    browser.wait_for_contains_text(TITLE, f"Before pass {number}:", timeout=30)
    wait_for_nodes(browser, timeout=30)


def test_a_session_alternating_between_servers_survives_one_of_them_killed(cluster, dash_br):
    balancer = cluster.balancer
    dash_br.server_url = f"{balancer.url}/?model=teach_conv_bn&pipeline=O2"
    wait_for_nodes(dash_br, timeout=60)
    first = pass_number(dash_br)
    before = Counter(balancer.answered)
    for click in range(1, 5):   # a step is one request (the panes), and the balancer alternates
        step_to(dash_br, first + click)
    answered = balancer.answered - before
    assert len(answered) == 2 and min(answered.values()) >= 2, answered   # both servers

    process = cluster.servers[0][0]
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    step_to(dash_br, first + 5)
    assert f"pass={first + 5}" in dash_br.driver.current_url
    dash_br.driver.refresh()   # the URL alone names the view: the surviving server draws it
    dash_br.wait_for_contains_text(TITLE, f"Before pass {first + 5}:", timeout=30)
    wait_for_nodes(dash_br, timeout=30)
    assert not [entry for entry in dash_br.get_logs() or [] if entry["level"] == "SEVERE"]
