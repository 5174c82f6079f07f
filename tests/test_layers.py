"""Layers point down only: storage <- identity <- promptsvc.

``storage`` imports nothing from ``identity`` or ``promptsvc``, and ``identity`` nothing
from ``promptsvc``. Every import statement counts, wherever it is (inside a function, a
class or an ``if TYPE_CHECKING`` block), and so does ``importlib.import_module`` or
``__import__`` with a literal name. The SDK reads templates from ``storage.templates``
in an install without the server's dependencies, so that import must not need them.
"""

from __future__ import annotations

import ast
import subprocess
import sys
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


def test_templates_import_without_the_servers_dependencies() -> None:
    """What the SDK imports from storage loads with redis, flask and limits missing."""
    blocked = ("redis", "flask", "limits", "flask_limiter", "authlib", "jwt", "identity")
    code = (
        "import sys\n"
        f"for name in {blocked!r}:\n"
        "    sys.modules[name] = None\n"
        "from storage.templates import MissingVariableError, TemplateError, render\n"
        "import storage\n"
        "print(render('Hi {{ name }}', 'text', {'name': 'Ada'}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Hi Ada\n"
