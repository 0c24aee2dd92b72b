"""A pass that takes its time, loaded as a plugin (``--plugins tests/slow_passes.py``): a
build that is slow on any machine, for the tests of what a long build must not hold up."""

from __future__ import annotations

import time

from compiler_core.passes.framework.base import Pass, PassResult
from compiler_core.passes.framework.pass_registry import register_pass

SECONDS = 8.0


@register_pass
class TakeSomeTime(Pass):
    """Test pass: changes nothing, after waiting SECONDS."""

    name = "test_take_some_time"
    family = "test"

    def run(self, graph, ctx):
        time.sleep(SECONDS)
        return PassResult()
