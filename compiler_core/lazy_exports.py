"""A package's names imported from their modules when first asked for (PEP 562).

A package whose ``__init__`` imported every module would make whoever needs one of them (a
pass reading the targets, a target reading its memory configuration) import them all."""

from __future__ import annotations

from importlib import import_module
from typing import Any, Callable


def lazy_exports(package: str, module_of: dict[str, str],
                 namespace: dict[str, Any]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: each name of ``module_of`` (name -> its
    submodule) is imported on first use and kept in the package's ``namespace``."""
    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = namespace[name] = getattr(import_module(f"{package}.{module}"), name)
        return value
    return __getattr__
