"""`graphlab serve`: the pass debugger in the browser (Dash under gunicorn: one worker with
threads for one user, several workers for a room)."""

from __future__ import annotations

import os
import socket
import sys
import threading
import webbrowser

from compiler_core.errors import GraphLabError

from ..app.builds import BUILD_MEMORY_MB, BUILD_SECONDS
from ..app.config import DEFAULT_MODEL, DEFAULT_UPLOAD_LIMIT, AppConfig
from ..app.cache_trouble import redacted
from ..samples import get_sample
from .common import add_plugins_option
from .redis_option import add_redis_option, redis_url

MAX_BUILD_SECONDS = 3000   # below the broker's redelivery timeout (an hour): see app/cluster.py


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("serve", help="open the pass debugger in the browser")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8050, help="port to listen on")
    parser.add_argument("--model", metavar="PATH|SAMPLE", default=DEFAULT_MODEL,
                        help=f"model shown first: a sample name or an .onnx file "
                             f"(default {DEFAULT_MODEL})")
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")
    parser.add_argument("--workers", type=int, default=1,
                        help="server processes; more than 1, or any with --redis, run under "
                             "gunicorn (for a room: the number of cores + 1)")
    parser.add_argument("--cache-dir", default=None,
                        help="where uploads and built models are kept (shared by the workers)")
    parser.add_argument("--max-upload-mb", type=int, default=DEFAULT_UPLOAD_LIMIT >> 20,
                        help="largest model a browser may upload")
    parser.add_argument("--allow-code", action="store_true",
                        help="let the browser name Python modules to load (onnxscript rules in "
                             "the Patterns tab): they run as code on this machine, so only on "
                             "your own machine, never on a shared server")
    parser.add_argument("--build-seconds", type=int, default=BUILD_SECONDS,
                        help=f"stop a build (import + pipeline) that runs longer "
                             f"(default {BUILD_SECONDS})")
    parser.add_argument("--build-memory-mb", type=int, default=BUILD_MEMORY_MB,
                        help=f"stop a build that takes more memory than this, so one upload "
                             f"cannot exhaust a builder's machine (default: half of this "
                             f"machine's memory, {BUILD_MEMORY_MB}; 0: no limit)")
    add_redis_option(parser, "keep uploads, builds and their progress in this Redis and run "
                             "builds on `graphlab worker` processes, so several servers on "
                             "several machines serve one class")
    add_plugins_option(parser)   # only files named here (and installed entry points) load
    parser.set_defaults(run=run)


def config_from_args(args) -> AppConfig:
    if args.workers < 1:
        raise GraphLabError("--workers must be at least 1")
    if args.max_upload_mb < 1:
        raise GraphLabError("--max-upload-mb must be at least 1")
    if not 1 <= args.build_seconds <= MAX_BUILD_SECONDS:
        raise GraphLabError(f"--build-seconds must be between 1 and {MAX_BUILD_SECONDS}")
    if args.build_memory_mb < 0:
        raise GraphLabError("--build-memory-mb must be 0 (no limit) or more")
    extras = {"allow_code": args.allow_code, "redis_url": redis_url(args),
              "build_seconds": args.build_seconds, "build_memory_mb": args.build_memory_mb}
    if args.cache_dir:
        extras["cache_dir"] = args.cache_dir
    if get_sample(args.model) is not None:
        return AppConfig(default_model=args.model, upload_limit=args.max_upload_mb << 20,
                         **extras)
    if not os.path.isfile(args.model):
        raise GraphLabError(f"{args.model!r} is neither a file nor a sample name",
                            hint="`graphlab samples` lists the samples")
    return AppConfig(extra_model_path=os.path.abspath(args.model),
                     upload_limit=args.max_upload_mb << 20, **extras)


def run(args) -> int:
    from ..app.multiprocess import serve_with_gunicorn  # only the command that serves
    from ..app.services import Services                 # imports the app

    config = config_from_args(args)
    check_port_free(args.host, args.port)   # before minutes of preparing, not after
    services = Services.from_config(config)
    if config.redis_url:
        print(f"shared state and builds: {redacted(config.redis_url)} "
              f"(start builders with `graphlab worker --redis URL`)")
    url = f"http://{args.host}:{args.port}/"

    def ready() -> None:   # the address is bound: say it once, then open a browser on it
        workers = f"{args.workers} worker processes; " if args.workers > 1 else ""
        print(f"GraphLab pass debugger on {url}  ({workers}Ctrl+C stops it)", flush=True)
        if not args.no_browser:
            threading.Thread(target=open_browser, args=(url,), daemon=True).start()

    def build_first_model() -> None:
        """The first model's build starts in a builder process as a worker starts (the build
        board lets only one start it), and the server listens at once: the page shows the
        build's progress as for any model (a 10,000-node graph takes longer to prepare than
        anyone should wait for an address).  Started from the workers, not from this
        process: a worker cannot use a builder launcher its parent started."""
        services.workspace_or_build(services.default_state, None)

    serve_with_gunicorn(config, args.host, args.port, args.workers, when_ready=ready,
                        in_each_worker=build_first_model)
    return 0


def check_port_free(host: str, port: int) -> None:
    """Refuse, in one line, an address another server holds (gunicorn would retry for five
    seconds and then print ten lines)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # as gunicorn binds
        try:
            probe.bind((host, port))
        except OSError as err:
            raise GraphLabError(f"cannot listen on {host}:{port}: {err.strerror or err}",
                                hint="another server holds it? --port N picks another") \
                from None


def open_browser(url: str) -> bool:
    """Open ``url`` in the user's browser; when none can open, say so in one line."""
    if no_display():
        print("could not open a browser here (no display): open the address above yourself",
              flush=True)
        return False
    try:
        opened = webbrowser.open(url)
    except Exception as err:  # noqa: BLE001 - whatever the platform's launcher raised
        opened, why = False, f" ({err})"
    else:
        why = ""
    if not opened:
        print(f"could not open a browser here{why}: open the address above yourself",
              flush=True)
    return opened


def no_display() -> bool:
    """A Linux or BSD machine without an X or Wayland display.  Python's webbrowser would
    find no graphical browser there, or start a text one (lynx, w3m) in this terminal, over
    the server's output."""
    graphical_elsewhere = sys.platform in ("darwin", "win32", "cygwin")
    return not graphical_elsewhere and not (os.environ.get("DISPLAY")
                                            or os.environ.get("WAYLAND_DISPLAY"))
