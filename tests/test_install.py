"""Installs are honest (issue 21, item 2): what a command imports is installed with the
extra it documents, and a missing optional part is one line naming the extra.

Each console script is checked in a virtualenv built with exactly the extra its docs name
(README, "Installing by hand"): ``numa-exporter`` in ``pip install numa-testkit`` (no
extra, a wheel of the tree), ``fakenrt`` in the environment ``make demo`` builds (the
``fakenrt`` extra). Every module a command can reach is found by reading the import
statements of the source - those inside functions too - from its entry point and from
every module of its package (fakenrt imports its commands by name), and then imported in
that virtualenv, the third-party ones included; every command's ``--help`` runs there
through the real console script.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Iterator
from functools import cache
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from exporter.extras import DISTRIBUTION, EXTRA_MODULES
from tests.cli_tree import scripts
from tests.installs import base_venv, runtime_venv

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PROJECT_PACKAGES = ("exporter", "fakenrt", "protos")

#: Console script -> (the extra its docs name, the virtualenv with exactly that extra).
SCRIPT_INSTALLS = {"numa-exporter": (None, "base"), "fakenrt": ("fakenrt", "runtime")}
#: Console script -> the package whose every module it may import (fakenrt imports its
#: commands by name when they run, so the walk starts from each module, not the entry).
SCRIPT_PACKAGES = {"numa-exporter": "exporter", "fakenrt": "fakenrt"}


def _venv(kind: str) -> Path:
    return base_venv() if kind == "base" else runtime_venv()


def _module_file(name: str) -> Path | None:
    base = ROOT.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imports_of(name: str, path: Path) -> Iterator[str]:
    """Every module an import statement (anywhere in the file) of ``path`` loads;
    ``module:name`` for each name of a ``from module import name`` (a submodule or an
    attribute)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            yield module
            yield from (f"{module}:{alias.name}" for alias in node.names)


@cache
def import_closure(entry: str) -> tuple[frozenset[str], frozenset[str]]:
    """(project modules, third-party names) that running ``entry`` may import; a
    third-party name is a module or ``module:name`` (from module import name)."""
    project: set[str] = set()
    third_party: set[str] = set()
    todo = [entry]
    while todo:
        name = todo.pop()
        if name in project:
            continue
        module, _, attribute = name.partition(":")
        top = module.split(".")[0]
        if top in sys.stdlib_module_names or top == "__future__":
            continue
        if top not in PROJECT_PACKAGES:
            third_party.add(name)
            continue
        if attribute:  # a project submodule, or an attribute of a module walked anyway
            todo.append(f"{module}.{attribute}")
            continue
        path = _module_file(name)
        if path is None:  # `from package import name` where name is not a module
            continue
        project.add(name)
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # parent packages
        todo.extend(_imports_of(name, path))
    return frozenset(project), frozenset(third_party)


_CHECKER = textwrap.dedent(
    """
    import importlib, json, sys
    failed = {}
    for name in json.loads(sys.argv[1]):
        module, _, attribute = name.partition(":")
        try:
            loaded = importlib.import_module(module)
            if attribute and not hasattr(loaded, attribute):
                importlib.import_module(f"{module}.{attribute}")
        except ImportError as exc:
            failed[name] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(failed))
    """
)


def _modules(package: str) -> list[str]:
    return sorted(
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for path in (ROOT / package).rglob("*.py")
    )


def script_closure(script: str) -> tuple[frozenset[str], frozenset[str]]:
    """(project modules, third-party names) that ``script`` may import: from its entry
    point and every module of its package."""
    entry = str(PYPROJECT["project"]["scripts"][script]).split(":")[0]
    project: set[str] = set()
    third_party: set[str] = set()
    for root in (entry, *_modules(SCRIPT_PACKAGES[script])):
        ours, theirs = import_closure(root)
        project |= ours
        third_party |= theirs
    return frozenset(project), frozenset(third_party)


def test_every_console_script_has_a_documented_install() -> None:
    assert set(PYPROJECT["project"]["scripts"]) == set(SCRIPT_INSTALLS)
    readme = (ROOT / "README.md").read_text()
    for extra, _ in SCRIPT_INSTALLS.values():
        if extra:
            assert f"pip install '{DISTRIBUTION}[{extra}]'" in readme


def test_the_extras_table_matches_pyproject() -> None:
    """exporter.extras names, per extra, modules whose distributions are exactly that
    extra's requirements (as installed in this environment)."""
    providers = packages_distributions()
    extras = PYPROJECT["project"]["optional-dependencies"]
    for extra, modules in EXTRA_MODULES.items():
        required = {
            req.split(";")[0].split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip()
            for req in extras[extra]
        }
        provided = {dist for m in modules for dist in providers.get(m.split(".")[0], [])}
        normalize = {d.lower().replace("_", "-") for d in provided}
        assert normalize == {r.lower() for r in required}, extra


def test_the_closure_sees_imports_inside_functions() -> None:
    """The walk is the check's substance: a lazy import deep in a command is found."""
    project, third_party = script_closure("fakenrt")
    assert "fakenrt.podschema" in project
    assert "kubernetes.client:models" in third_party  # imported inside pod validation
    assert "prometheus_client:CollectorRegistry" in third_party  # inside the controller command
    exporter_project, _ = script_closure("numa-exporter")
    assert not any(m.startswith("fakenrt") for m in exporter_project)
    assert "exporter.commands" in exporter_project  # imported after parsing


@pytest.mark.parametrize("script", sorted(SCRIPT_INSTALLS))
def test_every_module_a_command_imports_is_installed_with_it(script: str, tmp_path: Path) -> None:
    extra, kind = SCRIPT_INSTALLS[script]
    project, third_party = script_closure(script)
    # a module of another extra (Dask's client for --executor dask) is not the install's:
    # its command names that extra when it is missing (tests/simulate/test_dask.py)
    others = {m for name, modules in EXTRA_MODULES.items() if name != extra for m in modules}
    names = sorted(
        project | {n for n in third_party if n.split(":")[0].split(".")[0] not in others}
    )
    done = subprocess.run(
        [str(_venv(kind) / "bin" / "python"), "-c", _CHECKER, json.dumps(names)],
        cwd=tmp_path,  # not the repository: modules come from the install
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout) == {}, f"{script} in the {kind} install"


def _commands(script: str) -> list[list[str]]:
    return [
        path.split()[1:]
        for path, command in scripts()[script].walk(script)
        if not command.commands or path == script
    ]


@pytest.mark.parametrize("script", sorted(SCRIPT_INSTALLS))
def test_every_command_runs_in_its_install(script: str, tmp_path: Path) -> None:
    _, kind = SCRIPT_INSTALLS[script]
    for words in _commands(script):
        done = subprocess.run(
            [str(_venv(kind) / "bin" / script), *words, "--help"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, (script, words, done.stderr)
        assert done.stdout.startswith(("Usage:", "usage:")), (script, words)


def test_fakenrt_without_its_extra_names_it(tmp_path: Path) -> None:
    """``pip install numa-testkit`` installs ``fakenrt`` too; without the extra every
    command says which extra to install, in one line."""
    line = (
        "Error: fakenrt needs the 'fakenrt' extra of numa-testkit (click is not installed): "
        "pip install 'numa-testkit[fakenrt]'"
    )
    for words in (["--help"], ["demo"], ["kubelet", "explain", "--profile", "p", "--pod", "x"]):
        done = subprocess.run(
            [str(base_venv() / "bin" / "fakenrt"), *words],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=False,
        )
        assert (done.returncode, done.stdout, done.stderr) == (1, "", line + "\n"), words


@pytest.mark.parametrize(
    ("hidden", "words", "line"),
    [
        pytest.param(
            "matplotlib",
            [
                *("simulate", "--profiles", "fakenrt/examples/profiles/shapes.yaml"),
                *("--trace", "fakenrt/examples/simulate/small-trace.yaml", "--strategy"),
                *("oracle", "--report", "/dev/null", "--no-progress"),
            ],
            "Error: fakenrt needs the 'fakenrt' extra of numa-testkit (matplotlib is not "
            "installed): pip install 'numa-testkit[fakenrt]'",
            id="matplotlib",
        ),
    ],
)
def test_a_missing_optional_module_is_one_line(hidden: str, words: list[str], line: str) -> None:
    """The make-demo install with one module of the extra made unimportable (None in
    sys.modules: exactly the ModuleNotFoundError of an absent package)."""
    run_script = (
        f"import sys; sys.modules[{hidden!r}] = None; sys.argv = ['fakenrt', *sys.argv[1:]]\n"
        "from fakenrt.launch import main\nmain()"
    )
    done = subprocess.run(
        [str(runtime_venv() / "bin" / "python"), "-c", run_script, *words],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr) == (1, line + "\n")
