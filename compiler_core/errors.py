"""Errors the compiler core raises as data, so the CLI and the app can show them as messages.

Every error carries a message that says what was wrong, where (`where`: a node, value or file
name), and what to do about it (`hint`).  Callers print ``str(err)``: one line, no traceback.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ErrorRecord:
    """An error as JSON readers see it: its class's name, message, where and hint."""

    error: str
    message: str
    where: str | None
    hint: str | None


class GraphLabError(Exception):
    """Base class of every error GraphLab reports to a user."""

    def __init__(self, message: str, *, where: str | None = None, hint: str | None = None):
        self.message = message
        self.where = where
        self.hint = hint
        super().__init__(self.__str__())

    def __str__(self) -> str:
        text = self.message
        if self.hint:
            text += f" ({self.hint})"
        return text

    def record(self) -> ErrorRecord:
        """The error as a record for ``records.to_json`` (an exception cannot be a
        dataclass record itself: its fields would fight ``Exception``'s own arguments)."""
        return ErrorRecord(type(self).__name__, self.message, self.where, self.hint)


class ModelLoadError(GraphLabError):
    """The file or bytes given are not a model GraphLab can import."""


class InvalidGraphError(GraphLabError):
    """A graph breaks an IR invariant (cycle, undefined value, two producers, ...)."""


class VerificationError(GraphLabError):
    """A numerical check could not be run (not: the check ran and found a difference)."""


class RuntimeLoadError(VerificationError):
    """onnxruntime refused to load the model (a type it rejects, an op it has no kernel
    for): nothing was run."""


class RunFailedError(VerificationError):
    """onnxruntime loaded the model but could not run it on the inputs given (often: sizes
    the model does not accept); ``cause`` is onnxruntime's own message."""

    def __init__(self, message: str, *, where: str | None = None, hint: str | None = None,
                 cause: str = ""):
        self.cause = cause
        super().__init__(message, where=where, hint=hint)


class UnknownSampleError(GraphLabError):
    """A model name is neither a file nor a bundled sample."""


class PassFailedError(GraphLabError):
    """A pass raised: a bug in the pass (or a model it does not expect), named with the node it
    was working on so the user can report it or leave the pass out."""


class PropertyViolationError(GraphLabError):
    """A pass ran where a property it requires does not hold, or left one it ensures broken."""


class PluginError(GraphLabError):
    """A plugin (a file or an installed entry point) could not be loaded."""


class EditError(GraphLabError):
    """An edit of a model was refused: it names a node or value the model does not have, gives
    a value of the wrong type or shape, or would leave the graph cyclic or ill-typed.  The
    message names the edit (its place in the list and its kind); nothing of the list was
    applied."""
