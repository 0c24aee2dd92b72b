"""Errors as one readable sentence for the page; the server never dies on bad input."""

from __future__ import annotations

import logging

from compiler_core.errors import GraphLabError

log = logging.getLogger("graphlab.app")


def user_message(err: Exception) -> str:
    if isinstance(err, GraphLabError):
        return str(err)
    log.exception("unexpected error in a callback")
    return f"internal error: {type(err).__name__}: {err} (please report it)"
