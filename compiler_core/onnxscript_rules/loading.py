"""Finding onnxscript rewrite rules from ``MODULE[:NAME]`` or ``FILE.py[:NAME]``.

NAME may be a ``RewriteRule``, a ``RewriteRuleSet``, a list or tuple of them, a
``RewriteRuleClassBase`` subclass (its ``rule()``), or a function without arguments that returns
one of those (``fused_matmul_rule_sets``).  Without NAME, the rules of the module are found by
type: its rule sets, then its lists of rules, then its loose rules, each rule once; a package's
public submodules are searched first, so ``onnxscript.rewriter.ort_fusions`` yields every rule
set of onnxruntime's fusions, each named where it is defined (``...ort_fusions.gelu:gelu_rules``).

Importing a module runs its code: the CLI does it for the user who typed the name, and the app
only when started with ``serve --allow-code``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import pkgutil
import re
import sys
import traceback
import types
from collections import Counter
from dataclasses import dataclass, field

from ..errors import GraphLabError

INSTALL_HINT = 'install it with: pip install "graphlab[onnxscript]"'
SPEC_FORM = "MODULE[:NAME] (e.g. onnxscript.rewriter.ort_fusions) or FILE.py[:NAME]"
_DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


class RulesLoadError(GraphLabError):
    """The rules named could not be found or imported."""


@dataclass(frozen=True)
class RuleGroup:
    """Rules found together: a rule set, a list, or one loose rule."""

    source: str          # 'package.module:attribute', as a user could name it again
    rules: tuple         # onnxscript RewriteRule objects


@dataclass(frozen=True)
class RuleCatalog:
    spec: str
    groups: tuple[RuleGroup, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def entries(self):
        """(display name, 'source[index]', rule) for every rule, in order.  A rule without a
        name is called by where it was found ('erfgelu:rules[0]'); a name its group repeats
        (``commute`` makes such twins) gets its place too ('gelu_onnx_op #1')."""
        for group in self.groups:
            names = Counter(rule.name for rule in group.rules)
            module, _, attribute = group.source.rpartition(":")
            short = f"{_last_part(module)}:{attribute}"
            for index, rule in enumerate(group.rules):
                if not rule.name:
                    name = f"{short}[{index}]"
                else:
                    name = rule.name if names[rule.name] == 1 else f"{rule.name} #{index}"
                yield name, f"{group.source}[{index}]", rule


def _last_part(module: str) -> str:
    """'onnxscript.rewriter.ort_fusions.erfgelu' -> 'erfgelu'; 'dir/my_rules.py' ->
    'my_rules.py'."""
    return os.path.basename(module) if is_file_spec(module) else module.rsplit(".", 1)[-1]


def require_onnxscript():
    """The onnxscript.rewriter module; a clear message when onnxscript is not installed."""
    try:
        import onnxscript.rewriter as rewriter
    except ImportError as err:
        raise GraphLabError(f"--onnxscript-rules needs onnxscript, which cannot be imported "
                            f"here ({err})", hint=INSTALL_HINT) from err
    return rewriter


def onnxscript_version() -> str:
    import onnxscript
    return getattr(onnxscript, "__version__", "unknown")


def load_rules(spec: str) -> RuleCatalog:
    """The rules ``spec`` names (module docstring); a RulesLoadError says what was wrong."""
    rewriter = require_onnxscript()
    target, name = split_spec(spec)
    module = _import_file(target) if is_file_spec(target) else _import_module(target)
    label = target if is_file_spec(target) else module.__name__
    if name is None:
        groups, notes = _module_groups(module, rewriter, label)
    else:
        value = _attribute(module, name, spec)
        groups, notes = _named_groups(value, f"{label}:{name}", rewriter), []
    if not groups:
        raise RulesLoadError(f"{spec!r} holds no onnxscript rewrite rule",
                             hint="expected a RewriteRule, a RewriteRuleSet, a list of them, "
                                  "or a module that defines some")
    return RuleCatalog(spec, tuple(groups), tuple(notes))


def split_spec(spec: str) -> tuple[str, str | None]:
    """'pkg.mod:rules' -> ('pkg.mod', 'rules'); a Windows drive letter is not a NAME."""
    text = (spec or "").strip()
    if not text:
        raise RulesLoadError("no rules named", hint=f"give {SPEC_FORM}")
    target, name = text, None
    if ":" in text:
        head, tail = text.rsplit(":", 1)
        if _DOTTED.match(tail) and head:
            target, name = head, tail
    if not is_file_spec(target) and not _DOTTED.match(target):
        raise RulesLoadError(f"{spec!r} is neither a module name nor a .py file",
                             hint=f"give {SPEC_FORM}")
    return target, name


def is_file_spec(target: str) -> bool:
    """A spec target that names a file rather than a module."""
    return target.endswith(".py") or os.sep in target or "/" in target


def _import_module(name: str) -> types.ModuleType:
    if os.getcwd() not in sys.path:   # like `python -c`: modules beside the user are found
        sys.path.append(os.getcwd())
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name is not None and (name == err.name or name.startswith(err.name + ".")):
            raise RulesLoadError(f"no module named {name!r}", where=name,
                                 hint="give a module importable from here (installed, or in "
                                      "the current directory), or the path of a .py file"
                                 ) from err
        raise _import_failure(name, err) from err
    except Exception as err:  # noqa: BLE001 - any failure in the user's module is reported
        raise _import_failure(name, err) from err


def _import_file(path: str) -> types.ModuleType:
    source = os.path.abspath(path)
    if not os.path.isfile(source):
        raise RulesLoadError(f"rules file {path!r} not found", where=path,
                             hint=f"give {SPEC_FORM}")
    stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(source))[0])
    module_name = f"graphlab_rules_{stem}_{hashlib.sha1(source.encode()).hexdigest()[:8]}"
    spec = importlib.util.spec_from_file_location(module_name, source)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as err:  # noqa: BLE001 - as for modules
        del sys.modules[module_name]
        raise _import_failure(path, err) from err
    return module


def _import_failure(label: str, err: Exception) -> RulesLoadError:
    return RulesLoadError(f"{label} failed to import{where_raised(err)}: "
                          f"{type(err).__name__}: {err}", where=label,
                          hint="fix the module, or name another")


def where_raised(err: BaseException) -> str:
    """' (file.py, line N)': the innermost frame outside Python's import machinery."""
    frames = [f for f in traceback.extract_tb(err.__traceback__)
              if "importlib" not in f.filename and not f.filename.startswith("<frozen")]
    if isinstance(err, SyntaxError) and err.filename and err.lineno:
        return f" ({os.path.basename(err.filename)}, line {err.lineno})"
    if not frames:
        return ""
    return f" ({os.path.basename(frames[-1].filename)}, line {frames[-1].lineno})"


def _attribute(module: types.ModuleType, name: str, spec: str):
    value = module
    for part in name.split("."):
        if not hasattr(value, part):
            raise RulesLoadError(f"{module.__name__} has no {name!r}", where=spec,
                                 hint=f"the rules of the whole module: give {module.__name__} "
                                      f"without ':{name}'")
        value = getattr(value, part)
    return value


def _named_groups(value, source: str, rewriter) -> list[RuleGroup]:
    """The rules of an object the user named (module docstring)."""
    pattern = rewriter.pattern
    if isinstance(value, types.ModuleType):
        return _module_groups(value, rewriter, value.__name__)[0]
    if isinstance(value, type) and issubclass(value, pattern.RewriteRuleClassBase):
        return _named_groups(_called(value.rule, source), source, rewriter)
    if isinstance(value, (pattern.RewriteRule, pattern.RewriteRuleSet, list, tuple)):
        return [RuleGroup(source, tuple(_flattened(value, source, pattern)))]
    if callable(value):
        return _named_groups(_called(value, source), source, rewriter)
    raise RulesLoadError(f"{source} is a {type(value).__name__}, not a rewrite rule",
                         where=source, hint="expected a RewriteRule, a RewriteRuleSet, a list "
                                            "of them, or a module that defines some")


def _called(function, source: str):
    try:
        return function()
    except Exception as err:  # noqa: BLE001 - the user's code; say where it failed
        raise RulesLoadError(f"calling {source} to get its rules raised{where_raised(err)}: "
                             f"{type(err).__name__}: {err}", where=source,
                             hint="name a rule, a rule set, or a function without arguments "
                                  "that returns them") from err


def _flattened(value, source: str, pattern) -> list:
    if isinstance(value, pattern.RewriteRule):
        return [value]
    if isinstance(value, pattern.RewriteRuleSet):
        return list(value.rules)
    rules = []
    for index, item in enumerate(value):
        if not isinstance(item, (pattern.RewriteRule, pattern.RewriteRuleSet)):
            raise RulesLoadError(f"item {index} of {source} is a {type(item).__name__}, not "
                                 f"a rewrite rule", where=source,
                                 hint="a list of rules holds RewriteRule or RewriteRuleSet "
                                      "objects only")
        rules.extend(_flattened(item, source, pattern))
    return rules


def _module_groups(module: types.ModuleType, rewriter, label: str
                   ) -> tuple[list[RuleGroup], list[str]]:
    """Rule sets, then lists of rules, then loose rules, of the package's submodules and then of
    the module itself (called ``label``: a file is named by its path); each rule once, under the
    first name it is found by."""
    pattern = rewriter.pattern
    submodules, notes = _submodules(module)
    modules = submodules + [module]
    kinds = (lambda v: isinstance(v, pattern.RewriteRuleSet),
             lambda v: isinstance(v, (list, tuple)) and v and all(
                 isinstance(i, (pattern.RewriteRule, pattern.RewriteRuleSet)) for i in v),
             lambda v: isinstance(v, pattern.RewriteRule))
    seen: set[int] = set()
    groups = []
    for is_kind in kinds:
        for each in modules:
            for attribute, value in list(vars(each).items()):
                if attribute.startswith("__") or not is_kind(value):
                    continue
                fresh = [r for r in _flattened(value, attribute, pattern) if id(r) not in seen]
                seen.update(id(r) for r in fresh)
                if fresh:
                    where = label if each is module else each.__name__
                    groups.append(RuleGroup(f"{where}:{attribute}", tuple(fresh)))
    return groups, notes


def _submodules(package: types.ModuleType) -> tuple[list[types.ModuleType], list[str]]:
    """A package's public submodules, imported (depth first); one that fails to import is a
    note, not an error: the rest of the package still has its verdicts."""
    if not hasattr(package, "__path__"):
        return [], []
    found, notes = [], []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.name.startswith("test"):
            continue
        name = f"{package.__name__}.{info.name}"
        try:
            module = importlib.import_module(name)
        except Exception as err:  # noqa: BLE001 - e.g. an optional dependency it needs
            notes.append(f"skipped {name}: {type(err).__name__}: {err}")
            continue
        deeper, deeper_notes = _submodules(module)
        found += deeper + [module]
        notes += deeper_notes
    return found, notes
