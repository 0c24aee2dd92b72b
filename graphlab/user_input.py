"""What users type (in the CLI's options and the app's boxes), read into values or refused
with a message that shows the form expected."""

from __future__ import annotations

from compiler_core.errors import GraphLabError


def parse_bindings(text: str | None) -> dict[str, int]:
    """'batch=1,seq=128' -> {'batch': 1, 'seq': 128}, with a clear error for anything else."""
    bindings: dict[str, int] = {}
    for item in filter(None, (text or "").split(",")):
        name, sep, size = item.partition("=")
        if not sep or not name.strip() or not size.strip().isdigit() or int(size) <= 0:
            raise GraphLabError(f"cannot read binding {item!r}",
                                hint="write symbolic dims as name=size, e.g. batch=1,seq=128")
        bindings[name.strip()] = int(size)
    return bindings


def parse_integers(text: str, names: str) -> list[int]:
    """'64,32,16' read as the comma-separated whole numbers ``names`` lists."""
    parts = [p.strip() for p in text.split(",")]
    expected = names.split(",")
    if len(parts) != len(expected) or not all(p.isdigit() for p in parts):
        raise GraphLabError(f"cannot read {text!r} as {names}",
                            hint=f"give {len(expected)} whole numbers separated by commas")
    return [int(p) for p in parts]


def parse_array(text: str | None) -> tuple[int | None, int | None]:
    """'32x32' -> (32, 32); None -> (None, None), the target's own array."""
    if text is None:
        return None, None
    rows, sep, cols = text.lower().partition("x")
    if not sep or not rows.strip().isdigit() or not cols.strip().isdigit():
        raise GraphLabError(f"cannot read array {text!r}", hint="write rows x columns, "
                                                                "e.g. 32x32")
    return int(rows), int(cols)


def parse_operand_values(text: str | None, what: str) -> dict[str, int]:
    """'ifmap=64,filter=64,ofmap=32' -> {"ifmap": 64, ...}; any of the three may be left out."""
    if text is None:
        return {}
    values = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        name = name.strip().lower()
        if not sep or name not in ("ifmap", "filter", "ofmap") or not value.strip().isdigit():
            raise GraphLabError(f"cannot read {what} {text!r}",
                                hint=f"write ifmap=N,filter=N,ofmap=N ({what}); "
                                     "any of the three may be left out")
        values[name] = int(value)
    return values
