"""`graphlab serve`: the pass debugger in the browser (Dash; several workers run under gunicorn)."""

from __future__ import annotations

import os
import threading
import webbrowser

from compiler_core.errors import GraphLabError

from ..app.config import DEFAULT_MODEL, DEFAULT_UPLOAD_LIMIT, AppConfig
from ..samples import get_sample
from .common import add_plugins_option


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("serve", help="open the pass debugger in the browser")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8050, help="port to listen on")
    parser.add_argument("--model", metavar="PATH|SAMPLE", default=DEFAULT_MODEL,
                        help=f"model shown first: a sample name or an .onnx file "
                             f"(default {DEFAULT_MODEL})")
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")
    parser.add_argument("--workers", type=int, default=1,
                        help="server processes; more than 1 runs under gunicorn (for a room: "
                             "the number of cores + 1)")
    parser.add_argument("--cache-dir", default=None,
                        help="where uploads and built models are kept (shared by the workers)")
    parser.add_argument("--max-upload-mb", type=int, default=DEFAULT_UPLOAD_LIMIT >> 20,
                        help="largest model a browser may upload")
    parser.add_argument("--allow-code", action="store_true",
                        help="let the browser name Python modules to load (onnxscript rules in "
                             "the Patterns tab): they run as code on this machine, so only on "
                             "your own machine, never on a shared server")
    add_plugins_option(parser)   # only files named here (and installed entry points) load
    parser.set_defaults(run=run)


def config_from_args(args) -> AppConfig:
    if args.workers < 1:
        raise GraphLabError("--workers must be at least 1")
    if args.max_upload_mb < 1:
        raise GraphLabError("--max-upload-mb must be at least 1")
    extras = {"allow_code": args.allow_code}
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
    from ..app import create_app  # dash is imported only by the command that needs it
    from ..app.services import Services

    config = config_from_args(args)
    services = Services.from_config(config)
    print(f"preparing {services.default_state.model} ...")
    services.workspace(services.default_state, None)   # every worker opens the first page at once
    url = f"http://{args.host}:{args.port}/"
    if not args.no_browser:
        threading.Timer(1.5, webbrowser.open, args=(url,)).start()
    print(f"GraphLab pass debugger on {url}  (Ctrl+C stops it)")
    if args.workers == 1:
        create_app(config).run(host=args.host, port=args.port, debug=False)
        return 0
    from ..app.multiprocess import serve_with_gunicorn

    serve_with_gunicorn(config, args.host, args.port, args.workers)
    return 0
