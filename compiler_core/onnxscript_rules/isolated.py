"""The verdicts computed in a child process with a time limit, for a long-running server.

Importing the user's module in a fresh process each time means an edited rules file is judged
as it now reads (a module imported once stays as it was), the server's own modules stay as they
were, and a rule that loops, exits or crashes the interpreter costs a message, not the server.
"""

from __future__ import annotations

import multiprocessing
import os

from ..errors import GraphLabError
from ..ir import Graph
from .loading import is_file_spec, split_spec
from .records import RulesReport

TIME_LIMIT_SECONDS = 120.0


def explain_rules_isolated(graph: Graph, spec: str, *, node: str | None = None,
                           time_limit: float = TIME_LIMIT_SECONDS) -> RulesReport:
    """``explain_rules(graph, spec, node)`` run in a child process; its errors come back as
    GraphLabErrors, and so does a child that ran too long (stopped) or died."""
    spec = _absolute(spec)
    context = multiprocessing.get_context(
        "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn")
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=_judge, args=(send, graph, spec, node), daemon=True,
                              name="graphlab-onnxscript-rules")
    process.start()
    send.close()
    try:
        if not receive.poll(time_limit):
            raise GraphLabError(f"the rules of {spec} ran longer than {time_limit:g} s and were "
                                f"stopped", where=spec,
                                hint="a rule may loop; try it on a smaller model, or run "
                                     "`graphlab explain MODEL --onnxscript-rules` to see it work")
        kind, payload = receive.recv()
    except EOFError:
        process.join(5)
        raise GraphLabError(f"the process judging {spec} died (exit code {process.exitcode})",
                            where=spec, hint="a rule or the module may end the process or "
                                             "crash Python; run `graphlab explain MODEL "
                                             "--onnxscript-rules` to see the error") from None
    finally:
        receive.close()
        if process.is_alive():
            process.kill()
        process.join(5)
    if kind == "error":
        message, where, hint = payload
        raise GraphLabError(message, where=where, hint=hint)
    return payload


def _absolute(spec: str) -> str:
    """A relative rules file named from the server's working directory, whatever the child's."""
    target, name = split_spec(spec)
    if is_file_spec(target):
        target = os.path.abspath(target)
    return target if name is None else f"{target}:{name}"


def _judge(send, graph: Graph, spec: str, node: str | None) -> None:
    from . import explain_rules

    try:
        send.send(("ok", explain_rules(graph, spec, node)))
    except GraphLabError as err:
        send.send(("error", (err.message, err.where, err.hint)))
    except BaseException as err:  # noqa: BLE001 - the user's code: anything it does is a message
        send.send(("error", (f"judging the rules of {spec} failed: {type(err).__name__}: "
                             f"{err}", spec, None)))
    finally:
        send.close()
