"""Plugins: user code that registers passes (and rule sets, through the same registry).

Two ways in:
- a Python file (`graphlab compile --plugins my_passes.py`), imported once per process; its
  ``@register_pass`` decorators / ``register_pass(...)`` calls do the work;
- an installed package's entry point in the ``graphlab.plugins`` group, naming a module (imported)
  or a function (called with no arguments).

Loading a plugin runs its code with the user's rights, so only what the person running the
command named (or installed) is loaded — never anything a browser sends.  The sources loaded in
this process are remembered (``loaded_sources``) so a process that builds in a child (the app's
builders) can load the same ones there.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import traceback
from importlib.metadata import entry_points

from .errors import PluginError

ENTRY_POINT_GROUP = "graphlab.plugins"
ENTRY_POINT_PREFIX = "entry-point:"   # how an entry point is written in ``loaded_sources``

_loaded: dict[str, None] = {}   # sources loaded in this process, in order (a dict: no repeats)


def load_plugins(files: list[str] | tuple[str, ...] = (), *, entry_points_too: bool = True,
                 ) -> list[str]:
    """Load the plugin files, then (by default) the installed entry points; each source at
    most once per process.  Returns the sources loaded now or before, in order."""
    sources = []
    for path in files:
        sources.append(_load_file(path))
    if entry_points_too:
        for point in entry_points(group=ENTRY_POINT_GROUP):
            sources.append(_load_entry_point(point))
    return sources


def load_sources(sources: list[str] | tuple[str, ...]) -> None:
    """Load what ``loaded_sources`` returned in another process (files and entry points)."""
    wanted = {s[len(ENTRY_POINT_PREFIX):] for s in sources if s.startswith(ENTRY_POINT_PREFIX)}
    load_plugins([s for s in sources if not s.startswith(ENTRY_POINT_PREFIX)],
                 entry_points_too=False)
    for point in entry_points(group=ENTRY_POINT_GROUP):
        if point.name in wanted:
            _load_entry_point(point)


def loaded_sources() -> list[str]:
    """Every plugin source loaded in this process: absolute file paths and entry points."""
    return list(_loaded)


def _load_file(path: str) -> str:
    source = os.path.abspath(path)
    if source in _loaded:
        return source
    if not os.path.isfile(source):
        raise PluginError(f"plugin file {path!r} not found", where=path,
                          hint="give the path of a .py file that registers passes")
    digest = hashlib.sha1(source.encode()).hexdigest()[:8]
    module_name = f"graphlab_plugin_{_identifier(os.path.basename(source))}_{digest}"
    spec = importlib.util.spec_from_file_location(module_name, source)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module   # classes defined there pickle by this name
    try:
        spec.loader.exec_module(module)
    except Exception as err:  # noqa: BLE001 - any failure in user code is the plugin's error
        del sys.modules[module_name]
        raise PluginError(f"plugin {path} failed to load{_line_in(source, err)}: "
                          f"{type(err).__name__}: {err}", where=path,
                          hint="fix the plugin file, or leave it out") from err
    _loaded[source] = None
    return source


def _load_entry_point(point) -> str:
    source = ENTRY_POINT_PREFIX + point.name
    if source in _loaded:
        return source
    try:
        loaded = point.load()
        if callable(loaded):
            loaded()
    except Exception as err:  # noqa: BLE001 - as for files
        raise PluginError(f"plugin entry point {point.name!r} ({point.value}) failed to load: "
                          f"{type(err).__name__}: {err}", where=point.value,
                          hint=f"fix or uninstall the package that declares it in the "
                               f"{ENTRY_POINT_GROUP!r} group") from err
    _loaded[source] = None
    return source


def _line_in(source: str, err: Exception) -> str:
    """' at line N' of the plugin file where the error arose (innermost frame in the file)."""
    if isinstance(err, SyntaxError) and err.filename == source and err.lineno:
        return f" at line {err.lineno}"
    lines = [frame.lineno for frame in traceback.extract_tb(err.__traceback__)
             if frame.filename == source]
    return f" at line {lines[-1]}" if lines else ""


def _identifier(filename: str) -> str:
    stem = os.path.splitext(filename)[0]
    return "".join(c if c.isalnum() else "_" for c in stem)
