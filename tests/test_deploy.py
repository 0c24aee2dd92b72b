"""The files a course runs from (`deploy/`): nginx with the shipped config in front of two real
`serve --redis` servers passes a real model's upload and fails over when a server dies; the
compose file's commands are GraphLab's; the image's build context holds what the package
installs from."""

from __future__ import annotations

import base64
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
import yaml

from graphlab.app import ids
from onnx import TensorProto, helper, numpy_helper

from benchmarks.graphlab_page import open_page
from benchmarks.load import free_port
from benchmarks.load import wait_until
from benchmarks.local_cluster import listening
from graphlab.cli import build_parser

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
NGINX_DEFAULT_BODY_LIMIT = 1 << 20


def nginx_config(folder: Path, servers: list[str], port: int) -> str:
    """The shipped nginx.conf, pointed at ``servers`` and listening on ``port``; its files
    (pid, logs, buffered bodies) in ``folder``; each request's upstream and status logged."""
    shipped = (DEPLOY / "nginx.conf").read_text()
    line = re.search(r"^(\s*)server web:8050( [^;]*)?;$", shipped, re.M)
    assert line, "nginx.conf names its upstream as `server web:8050 ...;`"
    upstreams = "\n".join(f"{line.group(1)}server {url.removeprefix('http://')}"
                          f"{line.group(2) or ''};" for url in servers)
    config = shipped.replace(line.group(0), upstreams)
    config = config.replace("listen 8050;", f"listen 127.0.0.1:{port};")
    config = config.replace("http {", "\n".join([
        "http {",
        "    log_format upstream '$upstream_addr $status $request_length';",
        f"    access_log {folder}/access.log upstream;",
        *(f"    {kind}_temp_path {folder}/{kind};"
          for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))]), 1)
    running_as = "user root;\n" if os.geteuid() == 0 else ""   # workers must reach the folder
    return f"{running_as}daemon off;\npid {folder}/nginx.pid;\nerror_log {folder}/error.log;\n" \
           + config


@pytest.fixture
def nginx(cluster, tmp_path):
    """nginx with the shipped config in front of the cluster's two servers; its URL."""
    if shutil.which("nginx") is None:
        pytest.skip("nginx is not installed (Debian: apt-get install nginx)")
    port = free_port()
    (tmp_path / "nginx.conf").write_text(nginx_config(tmp_path, cluster.urls, port))
    process = subprocess.Popen(["nginx", "-e", str(tmp_path / "error.log"), "-p", str(tmp_path),
                                "-c", str(tmp_path / "nginx.conf")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while not (tmp_path / "nginx.pid").exists():
        if process.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"nginx did not start: {(tmp_path / 'error.log').read_text()[-2000:]}")
        time.sleep(0.1)
    yield url
    process.send_signal(signal.SIGQUIT)   # graceful stop
    process.wait(timeout=20)


def access_log(folder: Path) -> list[tuple[str, int, int]]:
    """(upstreams tried, status, request bytes) of every request nginx passed on."""
    rows = []
    for line in (folder / "access.log").read_text().splitlines():
        *upstreams, status, length = line.split()
        rows.append((" ".join(upstreams), int(status), int(length)))
    return rows


def big_model_bytes(seed: int) -> bytes:
    """A MatMul with a 2 MiB weight: a real model's upload is far above nginx's default limit."""
    weight = np.random.default_rng(seed).standard_normal((512, 1024)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="project"),
         helper.make_node("Relu", ["y"], ["z"], name="relu")], f"big{seed}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 512])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [4, 1024])],
        [numpy_helper.from_array(weight, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model.SerializeToString()


def test_nginx_with_the_shipped_config_passes_a_real_upload_and_uses_both_servers(
        nginx, cluster, tmp_path):
    tab = open_page(nginx, "?model=teach_conv_bn&pipeline=O2")
    tab.settle()
    data = big_model_bytes(seed=int(time.time()))   # content no earlier run has built
    assert len(data) > NGINX_DEFAULT_BODY_LIMIT
    tab.set("model-upload", filename="big.onnx",
            contents="data:application/octet-stream;base64," + base64.b64encode(data).decode())
    tab.settle()
    assert tab.get("view-state", "data")["model"] == "upload"
    assert tab.get("pane-before-title", "children").startswith("Before pass")
    tab.click("step-next")
    tab.settle()
    assert not tab.errors
    rows = access_log(tmp_path)
    assert max(length for _, _, length in rows) > len(data)   # the upload went through nginx
    assert {status for _, status, _ in rows} <= {200, 204}
    servers = {url.removeprefix("http://") for url in cluster.urls}
    answered = {upstream.split(", ")[-1] for upstream, _, _ in rows}
    assert answered == servers   # round robin over both


def test_nginx_with_the_shipped_config_sends_clicks_on_when_a_server_dies(
        nginx, cluster, tmp_path):
    tab = open_page(nginx, "?model=teach_conv_bn&pipeline=O2")
    tab.settle()
    title = tab.get("pane-before-title", "children")
    process, url = cluster.servers[0]
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    port = int(url.rsplit(":", 1)[1])
    wait_until(lambda: not listening(port), 20, "its orphaned gunicorn worker left")
    step = tab.get(ids.VIEW, "data")["step"]
    for later in range(step + 2, step + 5):   # addresses the browser went to (Back, Forward),
        tab.set(ids.URL_HEARD, data=f"?model=teach_conv_bn&pipeline=O2&pass={later}")   # each
        tab.settle()               # asking the reducer: half of them go first to the dead server
    assert tab.get("pane-before-title", "children") != title
    assert not tab.errors
    dead = cluster.urls[0].removeprefix("http://")
    assert any(upstream.startswith(dead + ",") for upstream, _, _ in access_log(tmp_path))


def test_the_compose_file_runs_graphlab_commands_that_exist():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
    parser = build_parser()
    commands = {name: service["command"] for name, service in compose.items()
                if service.get("command", [""])[0] == "graphlab"}
    assert {args[1] for args in commands.values()} == {"serve", "worker"}
    for name, args in commands.items():
        parsed = parser.parse_args(args[1:])   # an option the CLI lacks exits here
        assert compose[name]["environment"]["GRAPHLAB_REDIS_URL"].startswith("redis://redis:")
        assert compose[name]["image"] == "graphlab"
        if args[1] == "serve":
            assert parsed.host == "0.0.0.0" and parsed.no_browser
            assert f"server web:{parsed.port} " in (DEPLOY / "nginx.conf").read_text()
    volume = compose["balancer"]["volumes"][0].split(":")[0]
    assert (DEPLOY / volume).is_file()


@pytest.mark.slow
def test_the_image_build_context_holds_what_the_package_installs_from(tmp_path):
    """What the Dockerfile copies, and nothing else, builds a wheel with the app's data."""
    root = DEPLOY.parent
    context = tmp_path / "context"
    context.mkdir()
    for line in (DEPLOY / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY "):
            *sources, _ = line.split()[1:]
            for source in sources:
                copy = shutil.copytree if (root / source).is_dir() else shutil.copy
                copy(root / source, context / source)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                    str(tmp_path / "wheel"), str(context)], check=True, timeout=600)
    wheel, = (tmp_path / "wheel").glob("graphlab-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "graphlab/sample_models/manifest.json" in names
    assert any(n.startswith("graphlab/assets/") and n.endswith(".css") for n in names)
    assert any(n.startswith("compiler_core/hardware/targets/") for n in names)
    assert "graphlab/app/cluster.py" in names
    assert 'RUN pip install --no-cache-dir ".[cluster]"' in (DEPLOY / "Dockerfile").read_text()

