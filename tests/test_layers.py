"""Layers point down only: storage <- identity <- promptsvc.

``storage`` imports nothing from ``identity`` or ``promptsvc``, and ``identity`` nothing
from ``promptsvc``. Every import statement counts, wherever it is (inside a function, a
class or an ``if TYPE_CHECKING`` block), and so does ``importlib.import_module`` or
``__import__`` with a literal name.

The SDK (``promptsvc.client``) imports nothing outside ``promptsvc`` but the standard
library and the dependencies of ``pip install promptsvc``: an application with its own
``storage`` or ``identity`` package imports it all the same.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Lower number = lower layer; a module may import its own layer or lower ones only.
LAYERS = {"storage": 0, "identity": 1, "promptsvc": 2}


def imported_names(source: str, module: str) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in ``source``, the module
    ``module`` (dotted, e.g. ``storage.redis``; a package is ``storage.__init__``)."""
    package = module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolved against the module's package
                base = package[: len(package) - (node.level - 1)]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            yield node.lineno, name
        elif (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and _dynamic_import(node.func)
        ):
            yield node.lineno, node.args[0].value


def _dynamic_import(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return func.id in ("__import__", "import_module")
    return isinstance(func, ast.Attribute) and func.attr == "import_module"


def upward_imports(source: str, module: str) -> list[str]:
    """``module:line imports name`` for each import of a higher layer than ``module``'s."""
    own = LAYERS[module.split(".")[0]]
    return [
        f"{module}:{line} imports {name}"
        for line, name in imported_names(source, module)
        if LAYERS.get(name.split(".")[0], -1) > own
    ]


def layer_modules() -> list[tuple[str, Path]]:
    found = []
    for package in ("storage", "identity"):
        for path in sorted((ROOT / package).rglob("*.py")):
            dotted = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found.append((dotted, path))
    return found


def test_storage_and_identity_import_nothing_from_a_higher_layer() -> None:
    modules = layer_modules()
    assert {name.split(".")[0] for name, _ in modules} == {"storage", "identity"}
    problems = [
        problem for module, path in modules for problem in upward_imports(path.read_text(), module)
    ]
    assert problems == []


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("storage.memory", "import promptsvc.templates", ["promptsvc.templates"]),
        ("storage.redis", "def f():\n    from identity import keys", ["identity"]),
        ("storage.redis.cluster", "if TYPE_CHECKING:\n    from promptsvc import x", ["promptsvc"]),
        (
            "storage.redis.keys",
            "import importlib\nimportlib.import_module('identity.x')",
            ["identity.x"],
        ),
        ("storage.sub.mod", "from ...promptsvc import app", ["promptsvc"]),
        ("identity.ratelimit", "class A:\n    from promptsvc.api import errors", ["promptsvc.api"]),
        ("identity.realm", "from storage.redis import RedisStorage\nfrom . import keys", []),
        ("storage.redis.base", "from .core import RedisCore\nimport redis", []),
    ],
)
def test_an_upward_import_is_found_wherever_it_is(
    module: str, source: str, expected: list[str]
) -> None:
    found = [problem.rsplit(" imports ", 1)[1] for problem in upward_imports(source, module)]
    assert found == expected


def _module_file(name: str) -> Path | None:
    """The file of module ``name`` in this tree (a package's __init__.py), if any."""
    base = ROOT.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def sdk_imports() -> tuple[set[str], set[str]]:
    """(promptsvc modules the SDK loads, top-level names they import from elsewhere),
    following every import of promptsvc.client's modules through promptsvc's own.

    The ``promptsvc`` package's __init__.py is not followed: every import passes through
    it, and it imports the app only lazily (``__getattr__``); tests/test_sdk_install.py
    runs the SDK to show that.
    """
    queue = [
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for path in sorted((ROOT / "promptsvc" / "client").glob("*.py"))
    ]
    seen: set[str] = set()
    outside: set[str] = set()
    while queue:
        module = queue.pop()
        path = _module_file(module)
        if module in seen or path is None:
            continue
        seen.add(module)
        dotted = f"{module}.__init__" if path.name == "__init__.py" else module
        tree = ast.parse(path.read_text())
        names = [name for _, name in imported_names(path.read_text(), dotted)]
        # ``from promptsvc import templates`` imports a module too.
        names += [
            f"{node.module}.{alias.name}"
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module and not node.level
            for alias in node.names
        ]
        for name in names:
            top = name.split(".")[0]
            if top != "promptsvc":
                outside.add(top)
            elif name != "promptsvc" and _module_file(name) is not None:
                queue.append(name)
    return seen, outside


def sdk_dependencies() -> set[str]:
    """The import names of what ``pip install promptsvc`` installs (no extra)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {
        requirement.split(">")[0].split("[")[0].strip().replace("-", "_")
        for requirement in project["dependencies"]
    }


def test_the_sdk_imports_nothing_outside_promptsvc() -> None:
    loaded, outside = sdk_imports()
    # The walk follows the SDK into the promptsvc modules it uses.
    assert {"promptsvc.client.sync", "promptsvc.templates"} <= loaded
    allowed = set(sys.stdlib_module_names) | sdk_dependencies() | {"__future__"}
    assert sdk_dependencies() == {"httpx", "httpx_sse"}
    assert outside - allowed == set()


def test_templates_and_the_sdk_import_without_the_servers_packages() -> None:
    """The SDK loads with every server library and storage and identity missing."""
    blocked = ("redis", "flask", "limits", "flask_limiter", "authlib", "jwt")
    blocked += ("identity", "storage")
    code = (
        "import sys\n"
        f"for name in {blocked!r}:\n"
        "    sys.modules[name] = None\n"
        "from promptsvc.templates import MissingVariableError, TemplateError, render\n"
        "from promptsvc.client import PromptClient\n"
        "print(render('Hi {{ name }}', 'text', {'name': 'Ada'}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Hi Ada\n"
