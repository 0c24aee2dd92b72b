"""The wheel ships every Python package and the data folders (a forgotten package = a broken install)."""

from __future__ import annotations

import fnmatch
import os
import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _declared_packages() -> set[str]:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        return set(tomllib.load(handle)["tool"]["setuptools"]["packages"])


def test_every_source_package_is_declared():
    found = set()
    for top in ("compiler_core", "graphlab"):
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            if "__init__.py" in files and "__pycache__" not in folder:
                found.add(os.path.relpath(folder, ROOT).replace(os.sep, "."))
    missing = found - _declared_packages()
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {sorted(missing)}"


def test_data_folders_are_packages():
    declared = _declared_packages()
    assert {"graphlab.assets", "graphlab.sample_models"} <= declared
    assert os.path.exists(os.path.join(ROOT, "sample_models", "manifest.json"))


def _setuptools_table() -> dict:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        return tomllib.load(handle)["tool"]["setuptools"]


def test_every_data_file_in_a_package_ships():
    """A non-Python file inside a package (or in a plain folder under one) reaches the wheel only
    through package-data: a JSON table forgotten there works in a checkout and fails in every
    installed copy."""
    setuptools_table = _setuptools_table()
    package_data = setuptools_table["package-data"]
    package_dirs = setuptools_table.get("package-dir", {})
    declared = _declared_packages()
    unshipped = []
    for package in sorted(declared):
        root = os.path.join(ROOT, package_dirs.get(package, package.replace(".", os.sep)))
        for folder, subfolders, files in os.walk(root):
            inner = os.path.relpath(folder, root)
            as_package = package + "." + inner.replace(os.sep, ".")
            if inner != "." and (
                "__init__.py" in files
                or as_package in declared
                or "__pycache__" in folder
                or os.path.basename(folder).startswith(".")
            ):
                subfolders.clear()  # its own package (or a cache): checked on its own
                continue
            for name in files:
                if name.endswith((".py", ".pyc")) or name.startswith("."):
                    continue
                relative = name if inner == "." else os.path.join(inner, name).replace(os.sep, "/")
                if not any(fnmatch.fnmatch(relative, p) for p in package_data.get(package, [])):
                    unshipped.append(f"{package}: {relative}")
    assert not unshipped, f"add to [tool.setuptools.package-data] in pyproject.toml: {unshipped}"


def test_the_ci_command_installs_what_every_test_needs():
    """CI runs the README's command: the cluster tests skip without redis-server and the
    cluster extra, the deploy tests without nginx, so all must be in it (a skipped test
    proves nothing)."""
    with open(os.path.join(ROOT, "README.md")) as handle:
        readme = handle.read()
    with open(os.path.join(ROOT, ".ci", "run")) as handle:
        command = handle.read().strip().splitlines()[-1]
    assert command in readme
    assert "redis-server" in command and "chromium-driver" in command and " nginx" in command
    extras = command.split('pip install ".[')[1].split("]")[0].split(",")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        declared = tomllib.load(handle)["project"]["optional-dependencies"]
    assert {"test", "onnxscript", "cluster"} <= set(extras) <= set(declared)
