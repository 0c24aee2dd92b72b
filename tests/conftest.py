"""Shared test set-up.

The repository root goes at the *end* of the import path: test helpers can import the
benchmark scripts' generators (``benchmarks.*``), while ``graphlab`` and ``compiler_core``
still come from the installed package, so the suite tests what users install.
"""

import os
import shutil
import sys
import tempfile

import pytest

from compiler_core.ir.collection import unfreeze_kept

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.append(ROOT)

# Targets measured by tests go to a folder of their own, never the user's, and the user's
# measured targets do not leak into what tests see.
os.environ["GRAPHLAB_DATA_DIR"] = tempfile.mkdtemp(prefix="graphlab-test-data-")


@pytest.fixture(autouse=True)
def collector_unfrozen():
    """What a test froze out of the cycle collector's sight (the app's held workspaces, the
    command's exit) is handed back after it: the tests after it in the process start from an
    ordinary collector, as a fresh process would."""
    yield
    unfreeze_kept()


@pytest.fixture(scope="session")
def local_cluster(tmp_path_factory):
    """`serve --redis` with the real parts, started once for every cluster test: a
    redis-server on a loopback port, two servers behind a round-robin balancer, two workers."""
    pytest.importorskip("celery", reason="the cluster extra is not installed: "
                                         "pip install '.[cluster]'")
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (Debian: apt-get install redis-server)")
    from benchmarks.local_cluster import start_cluster

    running = start_cluster(str(tmp_path_factory.mktemp("cluster")), servers=2, workers=2)
    running.start_balancer()
    yield running
    running.stop()


@pytest.fixture
def cluster(local_cluster):
    """The cluster whole again, whatever the test before stopped (a server, a worker, Redis)."""
    local_cluster.revive()
    return local_cluster

