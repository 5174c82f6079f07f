"""Layers point down only: the template rules <- storage <- identity <- promptsvc, and
inside promptsvc too.

The template and contract rules (``promptsvc.templating``) import nothing but the
standard library, so that storage, the SDK and everything else can use them: ``storage``
imports nothing from ``identity`` or ``promptsvc`` but them, and ``identity`` nothing
from ``promptsvc`` but them. Inside promptsvc (:data:`INNER_LAYERS`): the rules and services
(actions, auth, inputs, events, webhooks, backup, ...) import nothing from the HTTP API
(``api/``) or the web console (``console/``), which import nothing from each other;
those two import nothing from the app that serves them, nor it from the command line
(``cli/``, with the MCP server, ``mcp/``, a client of the service as the CLI is).
No module imports another that imports it back, directly or through others.

Every import statement counts, wherever it is (inside a function, a class or an ``if
TYPE_CHECKING`` block), and so does ``importlib.import_module`` or ``__import__`` with a
literal name.

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
# The standard-library-only leaf below them all.
LEAF = "promptsvc.templating"


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
        if not _within(name, LEAF) and LAYERS.get(name.split(".")[0], -1) > own
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
        ("storage.contracts", "from promptsvc.templating import contract", []),
        ("storage.records", "from promptsvc.templating.contract import X", []),
        ("storage.records", "from promptsvc.templatingx import X", ["promptsvc.templatingx"]),
        ("storage.records", "from promptsvc import templating", ["promptsvc"]),
    ],
)
def test_an_upward_import_is_found_wherever_it_is(
    module: str, source: str, expected: list[str]
) -> None:
    found = [problem.rsplit(" imports ", 1)[1] for problem in upward_imports(source, module)]
    assert found == expected


def test_the_template_rules_import_only_the_standard_library() -> None:
    """Nothing of the project but themselves and the ``promptsvc`` package (which loads
    its app lazily), checked by importing them in a fresh interpreter."""
    leaf = sorted((ROOT / "promptsvc" / "templating").glob("*.py"))
    assert len(leaf) >= 3
    allowed = set(sys.stdlib_module_names) | {"__future__"}
    for path in leaf:
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for _, name in imported_names(path.read_text(), module):
            assert _within(name, LEAF) or name.split(".")[0] in allowed, (module, name)
    code = (
        "import sys\n"
        "import promptsvc.templating.contract, promptsvc.templating.template\n"
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        f"{(*LAYERS, 'flask', 'redis', 'sqlalchemy', 'httpx')!r})))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "promptsvc",
        "promptsvc.templating",
        "promptsvc.templating.contract",
        "promptsvc.templating.sections",
        "promptsvc.templating.template",
        "promptsvc.version",
    ]


# Layers inside promptsvc, lower number = lower layer: a module is in the layer of the
# longest name here that is it or holds it; every other module of promptsvc is in layer
# 0 (the rules and services). The package itself offers create_app, so it sits with the
# app.
INNER_LAYERS = {
    "promptsvc": 2,
    "promptsvc.api": 1,
    "promptsvc.console": 1,
    "promptsvc.app": 2,
    "promptsvc.cli": 3,
    "promptsvc.mcp": 3,
}
# Ways in, in one layer, that must not import each other.
SIBLINGS = ("promptsvc.api", "promptsvc.console")


def all_modules() -> dict[str, Path]:
    """Dotted name -> file of every module of storage, identity and promptsvc (a package
    by its own name, e.g. ``storage`` for storage/__init__.py)."""
    found = {}
    for package in LAYERS:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def import_graph(sources: dict[str, str], packages: set[str]) -> dict[str, set[str]]:
    """Module -> the modules of ``sources`` it imports (``packages``: those of them that
    are packages). ``from a import b`` imports module ``a.b`` when there is one, else
    ``a``; imports of modules not in ``sources`` are left out."""
    graph: dict[str, set[str]] = {}
    for module, source in sources.items():
        # imported_names resolves relative imports against the module's package.
        as_file = f"{module}.__init__" if module in packages else module
        tree = ast.parse(source)
        targets: set[str] = set()
        for line, name in imported_names(source, as_file):
            names = _from_names(tree, line)
            submodules = [f"{name}.{each}" for each in names if f"{name}.{each}" in sources]
            targets.update(submodules)
            if len(submodules) < len(names) or not names:  # takes from ``name`` itself
                targets.update({name} & sources.keys())
        graph[module] = targets - {module}
    return graph


def _from_names(tree: ast.Module, line: int) -> list[str]:
    """The names the ``from ... import`` statement on ``line`` takes (none for others)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.lineno == line:
            return [alias.name for alias in node.names]
    return []


def _within(module: str, name: str) -> bool:
    return module == name or module.startswith(name + ".")


def inner_layer(module: str) -> int:
    if module == "promptsvc":
        return INNER_LAYERS[module]
    holders = [name for name in INNER_LAYERS if name != "promptsvc" and _within(module, name)]
    return INNER_LAYERS[max(holders, key=len)] if holders else 0


def _sibling(module: str) -> str:
    return next((name for name in SIBLINGS if _within(module, name)), "")


def inner_problems(graph: dict[str, set[str]]) -> list[str]:
    """``module imports target (why)`` for every import that breaks promptsvc's layers."""
    problems = []
    for module, targets in sorted(graph.items()):
        if not _within(module, "promptsvc"):
            continue
        for target in sorted(targets):
            if not _within(target, "promptsvc"):
                continue
            elif inner_layer(target) > inner_layer(module):
                problems.append(f"{module} imports {target} (a higher layer)")
            elif "" != _sibling(module) != _sibling(target) != "":
                problems.append(f"{module} imports {target} (a sibling)")
    return problems


def import_loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every set of two or more modules that import each other, directly or through
    others: the strongly connected components of ``graph`` (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    loops: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = [stack.pop()]
            while component[-1] != module:
                component.append(stack.pop())
            if len(component) > 1:
                loops.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(loops)


def project_graph() -> dict[str, set[str]]:
    modules = all_modules()
    packages = {name for name, path in modules.items() if path.name == "__init__.py"}
    return import_graph({name: path.read_text() for name, path in modules.items()}, packages)


def test_promptsvc_keeps_its_inner_layers() -> None:
    graph = project_graph()
    assert {"promptsvc.actions", "promptsvc.api.versions", "promptsvc.cli.serve"} <= set(graph)
    assert "promptsvc.api.common" in graph["promptsvc.api.versions"]  # the graph is real
    assert inner_problems(graph) == []


def test_the_service_does_not_import_the_sdk() -> None:
    """What both use (the rollout hash, the template rules) lives outside the SDK; only
    the clients of the service (the command line, the MCP server) import it."""
    clients = ("promptsvc.client", "promptsvc.cli", "promptsvc.mcp")
    graph = project_graph()
    found = [
        f"{module} imports {target}"
        for module, targets in sorted(graph.items())
        if not any(_within(module, name) for name in clients)
        for target in sorted(targets)
        if _within(target, "promptsvc.client")
    ]
    assert "promptsvc.rollout" in graph["promptsvc.api.reads"]  # what it uses instead
    assert found == []


def test_no_modules_import_each_other() -> None:
    """Not directly, and not in a loop through others, whatever the layers allow."""
    assert import_loops(project_graph()) == []


KNOWN = {
    "promptsvc": "",
    "promptsvc.actions": "",
    "promptsvc.api": "",
    "promptsvc.api.common": "",
    "promptsvc.api.errors": "",
    "promptsvc.api.schemas": "",
    "promptsvc.app": "",
    "promptsvc.cli": "",
    "promptsvc.cli.serve": "",
    "promptsvc.http": "",
    "storage": "",
}


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        (
            "promptsvc.actions",
            "from promptsvc.api.errors import Forbidden",
            ["promptsvc.api.errors (a higher layer)"],
        ),
        (
            "promptsvc.webhooks.worker",
            "def f():\n    from promptsvc import app",
            ["promptsvc.app (a higher layer)"],
        ),
        (
            "promptsvc.backup.writing",
            "from promptsvc import __version__",
            ["promptsvc (a higher layer)"],
        ),
        (
            "promptsvc.console.pages",
            "from ..api import schemas",
            ["promptsvc.api.schemas (a sibling)"],
        ),
        (
            "promptsvc.app",
            "from promptsvc.cli import serve",
            ["promptsvc.cli.serve (a higher layer)"],
        ),
        ("promptsvc.cli.serve", "from promptsvc.app import create_app\nimport promptsvc.http", []),
        ("promptsvc.api.versions", "from promptsvc import actions\nfrom . import common", []),
    ],
)
def test_an_inner_layer_break_is_found(module: str, source: str, expected: list[str]) -> None:
    graph = import_graph(KNOWN | {module: source}, {"promptsvc", "promptsvc.api", "promptsvc.cli"})
    assert inner_problems(graph) == [f"{module} imports {problem}" for problem in expected]


@pytest.mark.parametrize(
    ("sources", "expected"),
    [
        ({"a.x": "from a import y", "a.y": "import a.x"}, [["a.x", "a.y"]]),
        (
            {
                "a.x": "from a.y import f",
                "a.y": "if TYPE_CHECKING:\n    from a.z import C",
                "a.z": "def g():\n    from . import x",
                "a.w": "from a import x",
            },
            [["a.x", "a.y", "a.z"]],
        ),
        ({"a": "from a import x", "a.x": "from a import y", "a.y": "import json"}, []),
    ],
)
def test_a_loop_is_found_through_any_import(
    sources: dict[str, str], expected: list[list[str]]
) -> None:
    assert import_loops(import_graph(sources, {"a"})) == expected


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


# Optional integrations the SDK imports where they are installed, never required
# (promptsvc/client/tracing.py; tests/client/test_sdk_tracing.py runs it without).
SDK_OPTIONAL = {"opentelemetry"}


def test_the_sdk_imports_nothing_outside_promptsvc() -> None:
    loaded, outside = sdk_imports()
    # The walk follows the SDK into the promptsvc modules it uses.
    assert {"promptsvc.client.sync", "promptsvc.templating.template"} <= loaded
    allowed = set(sys.stdlib_module_names) | sdk_dependencies() | {"__future__"} | SDK_OPTIONAL
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
        "from promptsvc.templating.template import MissingVariableError, TemplateError, render\n"
        "from promptsvc.client import PromptClient\n"
        "print(render('Hi {{ name }}', 'text', {'name': 'Ada'}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Hi Ada\n"
