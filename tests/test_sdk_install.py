"""``pip install promptsvc`` gives the SDK alone, on httpx and httpx-sse (its
Server-Sent Events parser, for ``watch=True``); the service comes with
``pip install 'promptsvc[server]'``.

Most tests here use one fresh virtualenv per session with this working tree installed
the way a user installs it (a wheel, no extra), and run its python and its
``promptsvc`` command with the virtualenv as working directory, so nothing of the
source tree is importable there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.servers import ROOT, Server, bootstrap_file, free_port, promptsvc_command

# What the server extra brings (and Flask, marshmallow and Authlib bring along).
SERVER_MODULES = (
    "flask",
    "werkzeug",
    "flask_smorest",
    "marshmallow",
    "authlib",
    "joserfc",
    "redis",
    "hiredis",
    "jwt",
    "cryptography",
    "gunicorn",
    "flask_swagger_ui",
    "flask_limiter",
    "argon2",
)
OWN_PACKAGES = {"promptsvc", "identity", "storage"}
SDK_LIBRARIES = {"httpx_sse"}
SERVER_INSTALL = "pip install 'promptsvc[server]'"

# A deadline for commands in the virtualenv, and a longer one for making it (a venv and a
# pip install that may download): generous on a loaded machine, where an install of the
# mcp extra took over 300 s. Only a hung command waits it out.
COMMAND_SECONDS = 300
INSTALL_SECONDS = 1800

ADMIN_SECRET = "sdk-install-admin-0123456789"
READ_SECRET = "sdk-install-read-0123456789"


class Venv:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.python = path / "bin" / "python"
        self.promptsvc = path / "bin" / "promptsvc"

    def run(
        self,
        *args: str | Path,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        timeout: float = COMMAND_SECONDS,
    ) -> subprocess.CompletedProcess[str]:
        """``args`` with this environment's variables (minus any Python path) plus ``env``,
        in ``cwd`` (default: the virtualenv)."""
        base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env = {**base, **(env or {})}
        return subprocess.run(
            [str(arg) for arg in args],
            cwd=cwd or self.path,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def python_code(self, code: str, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(self.python, "-c", code, *args)


@pytest.fixture(scope="session")
def sdk_venv(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """A fresh virtualenv with ``pip install <this tree>``: a wheel, no extra."""
    root = tmp_path_factory.mktemp("sdk-install")
    # The wheel is built from a copy: setuptools builds inside the source directory, and
    # a build/ left there by an older tree would put modules deleted since into the wheel.
    source = root / "source"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".venv"
        ),
    )
    subprocess.run(
        [sys.executable, "-m", "venv", str(root / "venv")], check=True, timeout=INSTALL_SECONDS
    )
    venv = Venv(root / "venv")
    install = venv.run(
        venv.python, "-m", "pip", "install", "--quiet", source, timeout=INSTALL_SECONDS
    )
    assert install.returncode == 0, install.stdout + install.stderr
    return venv


def test_the_sdk_install_depends_on_httpx_and_httpx_sse_alone(sdk_venv: Venv) -> None:
    shown = sdk_venv.python_code(
        "import importlib.metadata as m, json; print(json.dumps(m.requires('promptsvc')))"
    )
    assert shown.returncode == 0, shown.stderr
    requirements: list[str] = json.loads(shown.stdout)
    assert [r for r in requirements if "extra ==" not in r] == ["httpx>=0.27", "httpx-sse>=0.4"]
    assert any('extra == "server"' in r and r.startswith("flask>=") for r in requirements)


def test_the_server_libraries_are_not_installed(sdk_venv: Venv) -> None:
    shown = sdk_venv.python_code(
        "import importlib.util, json, sys\n"
        "print(json.dumps({n: importlib.util.find_spec(n) is not None for n in sys.argv[1:]}))",
        *SERVER_MODULES,
    )
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == dict.fromkeys(SERVER_MODULES, False)


def test_the_command_starts_without_the_server(sdk_venv: Venv) -> None:
    listed = sdk_venv.run(sdk_venv.promptsvc, "--help")
    assert listed.returncode == 0, listed.stderr
    commands = ("serve", "keys", "users", "signing-keys", "backup", "restore")
    commands += ("login", "logout", "whoami", "prompts", "pull", "plan", "apply", "mcp")
    for command in commands:
        assert command in listed.stdout
    version = sdk_venv.run(sdk_venv.promptsvc, "--version")
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith("promptsvc 0.")
    serve_help = sdk_venv.run(sdk_venv.promptsvc, "serve", "--help")
    assert serve_help.returncode == 0, serve_help.stderr
    assert "--demo" in serve_help.stdout
    login_help = sdk_venv.run(sdk_venv.promptsvc, "login", "--help")
    assert login_help.returncode == 0, login_help.stderr
    assert "--device" in login_help.stdout and "--no-browser" in login_help.stdout
    # The sign-in code itself runs here: it gets as far as the unreachable realm.
    nowhere = "http://127.0.0.1:1"
    login = sdk_venv.run(sdk_venv.promptsvc, "login", "--url", nowhere, "--org", "acme", "--device")
    assert login.returncode == 1
    assert login.stderr.startswith(f"promptsvc: error: cannot reach {nowhere}: ")


@pytest.mark.parametrize(
    ("argv", "missing"),
    [
        (["serve"], "werkzeug"),
        (["serve", "--demo", "--port", "0"], "werkzeug"),
        # Port 1: nothing listens there, and the command stops before connecting anyway.
        # The operator commands read the service's settings first (their rate limits are
        # parsed by the `limits` package), so that is the first module found missing.
        (["keys", "list", "--org", "acme", "--storage", "redis://127.0.0.1:1/0"], "limits"),
        (["signing-keys", "rotate", "--storage", "redis://127.0.0.1:1/0"], "limits"),
        (["users", "list", "--org", "acme", "--storage", "redis://127.0.0.1:1/0"], "limits"),
        (["backup", "--storage", "redis://127.0.0.1:1/0", "--out", "x.json"], "marshmallow"),
        (["restore", "--storage", "redis://127.0.0.1:1/0", "x.json"], "marshmallow"),
    ],
)
def test_server_commands_say_how_to_install_the_server(
    sdk_venv: Venv, argv: list[str], missing: str
) -> None:
    result = sdk_venv.run(sdk_venv.promptsvc, *argv)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"promptsvc: error: `promptsvc {argv[0]}` needs the server's dependencies, which "
        f"are not installed (No module named '{missing}'). Install them with: "
        f"{SERVER_INSTALL}\n"
    )


def test_the_mcp_command_says_how_to_install_the_mcp_extra(sdk_venv: Venv) -> None:
    help_ = sdk_venv.run(sdk_venv.promptsvc, "mcp", "--help")
    assert help_.returncode == 0, help_.stderr
    assert "--environment" in help_.stdout and "--http" in help_.stdout
    result = sdk_venv.run(sdk_venv.promptsvc, "mcp")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (
        "promptsvc: error: `promptsvc mcp` needs the MCP SDK, which is not installed (No "
        "module named 'mcp'). Install it with: pip install 'promptsvc[mcp]'\n"
    )


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """``promptsvc serve`` on memory storage, run from the test's own environment (which
    has the server extra), with one prompt in production."""
    bootstrap = bootstrap_file(
        tmp_path,
        {
            "acme": {
                "acme-admin": (ADMIN_SECRET, "Service Admin"),
                "acme-read": (READ_SECRET, "Service Read"),
            }
        },
    )
    port = free_port()
    command = promptsvc_command(
        "serve", "--port", str(port), "--storage", "memory://", "--bootstrap", str(bootstrap)
    )
    with Server(command, port) as running, httpx.Client(base_url=running.base_url) as http:
        token = http.post(
            "/v1/auth/sdk-token",
            json={"account_id": "acme", "key_id": "acme-admin", "key_secret": ADMIN_SECRET},
        ).json()["access_token"]
        auth = {"Authorization": f"Bearer {token}"}
        assert http.post("/api/v1/prompts", json={"name": "greeting"}, headers=auth).is_success
        created = http.post(
            "/api/v1/prompts/greeting/versions",
            json={"content": "Hello {{name}}"},
            headers=auth,
        )
        assert created.status_code == 201, created.text
        promoted = http.post(
            f"/api/v1/prompts/greeting/versions/{created.json()['version_id']}/promote",
            headers=auth,
        )
        assert promoted.status_code == 200, promoted.text
        yield running


READ_WITH_THE_SDK = """
import json, sys, time
import promptsvc
from promptsvc.client import PromptClient

url, secret = sys.argv[1:]
with PromptClient(
    url, account_id="acme", key_id="acme-read", key_secret=secret, watch=True
) as client:
    version = client.get_prompt_version("greeting")
    deadline = time.monotonic() + 60
    while not client.watching and time.monotonic() < deadline:
        time.sleep(0.01)
    watching = client.watching
print(json.dumps({
    "installed_at": promptsvc.__file__,
    "version": version.version,
    "is_production": version.is_production,
    "rendered": version.render(name="Ada"),
    "watching": watching,
}))
"""


def test_the_sdk_install_reads_a_prompt_from_a_running_server(
    sdk_venv: Venv, server: Server
) -> None:
    result = sdk_venv.python_code(READ_WITH_THE_SDK, server.base_url, READ_SECRET)
    assert result.returncode == 0, result.stderr
    read = json.loads(result.stdout)
    # The wheel's copy, not the source tree.
    assert Path(read["installed_at"]).is_relative_to(sdk_venv.path)
    assert read["version"] == 1
    assert read["is_production"] is True
    assert read["rendered"] == "Hello Ada"
    assert read["watching"] is True  # the events stream, read with httpx-sse


APP_WITH_ITS_OWN_PACKAGES = """
import json, sys
import identity, storage
from promptsvc.client import MissingVariableError, PromptClient

url, secret = sys.argv[1:]
with PromptClient(url, account_id="acme", key_id="acme-read", key_secret=secret) as client:
    version = client.get_prompt_version("greeting")
try:
    version.render()
    missing = None
except MissingVariableError as exc:
    missing = exc.args[0]
print(json.dumps({
    "storage": storage.OWNER,
    "identity": identity.OWNER,
    "rendered": version.render(name="Ada"),
    "variables": list(version.variables),
    "missing": missing,
    "loaded": sorted({m.partition(".")[0] for m in sys.modules}),
}))
"""


def test_an_application_with_its_own_storage_and_identity_uses_the_sdk(
    sdk_venv: Venv, server: Server, tmp_path: Path
) -> None:
    """An application directory (first on sys.path when its script runs) with packages
    named like the server's: the SDK imports neither, so the application's stay its own."""
    app = tmp_path / "app"
    for package in ("storage", "identity"):
        (app / package).mkdir(parents=True)
        (app / package / "__init__.py").write_text(f'OWNER = "the application\'s {package}"\n')
    (app / "main.py").write_text(APP_WITH_ITS_OWN_PACKAGES)
    result = sdk_venv.run(sdk_venv.python, "main.py", server.base_url, READ_SECRET, cwd=app)
    assert result.returncode == 0, result.stderr
    read = json.loads(result.stdout)
    assert read["storage"] == "the application's storage"
    assert read["identity"] == "the application's identity"
    assert read["rendered"] == "Hello Ada"
    assert read["variables"] == ["name"]
    assert read["missing"] == "name"
    assert "promptsvc" in read["loaded"]


def test_the_http_commands_run_in_the_sdk_install(
    sdk_venv: Venv, server: Server, tmp_path: Path
) -> None:
    """prompts, pull, plan and apply: what a CI runner with `pip install promptsvc` runs."""
    env = {
        "PROMPTSVC_URL": server.base_url,
        "PROMPTSVC_ACCOUNT_ID": "acme",
        "PROMPTSVC_KEY_ID": "acme-admin",
        "PROMPTSVC_KEY_SECRET": ADMIN_SECRET,
    }

    def promptsvc(*args: str | Path) -> subprocess.CompletedProcess[str]:
        return sdk_venv.run(sdk_venv.promptsvc, *args, env=env)

    listed = promptsvc("prompts", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [p["name"] for p in json.loads(listed.stdout)] == ["greeting"]
    shown = promptsvc("prompts", "show", "greeting", "production")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.endswith("\n\nHello {{name}}\n")

    directory = tmp_path / "prompts"
    assert promptsvc("pull", directory).returncode == 0
    assert promptsvc("plan", directory).returncode == 0
    greeting = directory / "greeting.prompt"
    greeting.write_bytes(greeting.read_bytes().replace(b"Hello", b"Hi"))
    plan = promptsvc("plan", directory)
    assert plan.returncode == 2, plan.stderr
    applied = promptsvc("apply", directory, "--promote")
    assert applied.returncode == 0, applied.stderr
    assert "^ greeting: promoted v2 (was v1)" in applied.stdout
    missing = promptsvc("prompts", "show", "nope")
    assert missing.returncode == 1
    assert "prompt 'nope' not found (404 not_found, request id " in missing.stderr


def _loaded_beyond_httpx(code: str) -> set[str]:
    """Top-level modules that ``code``, run in a fresh interpreter of this environment,
    loads beyond the stdlib and what ``import httpx`` loads."""

    def loaded(source: str) -> set[str]:
        listing = "import sys\nprint(' '.join({m.partition('.')[0] for m in sys.modules}))"
        result = subprocess.run(
            [sys.executable, "-c", f"{source}\n{listing}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return set(result.stdout.split())

    return loaded(code) - loaded("import httpx") - set(sys.stdlib_module_names)


@pytest.mark.parametrize(
    "code",
    ["import promptsvc", "from promptsvc.client import AsyncPromptClient, PromptClient"],
)
def test_the_sdk_loads_nothing_outside_promptsvc(code: str) -> None:
    assert _loaded_beyond_httpx(code) <= {"promptsvc"} | SDK_LIBRARIES


@pytest.mark.parametrize(
    "code",
    [
        # What `promptsvc --help` loads: every command's parser.
        "from promptsvc.cli import build_parser; build_parser()",
        # What the HTTP commands load when they run (the format, the diff, the client).
        "from promptsvc.cli import main; main(['plan', '/nonexistent'])",
        # What a saved login loads: the credentials file and the sign-in flows.
        "from promptsvc.cli import main, signin; main(['whoami'])",
    ],
)
def test_the_sdk_and_the_command_load_nothing_of_the_server(code: str) -> None:
    # Here the server extra is installed, so a stray import would succeed: this shows it
    # is not made at all, however the environment was set up.
    assert _loaded_beyond_httpx(code) <= OWN_PACKAGES | SDK_LIBRARIES


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    quick_start = readme.split("## Quick start", 1)[1].split("```sh\n", 1)[1].split("```")[0]
    serve_line, test_line = (line.split("#")[0].strip() for line in quick_start.splitlines())
    assert serve_line == "python -m pip install -e '.[server]' && promptsvc serve --demo"
    assert test_line == "python -m pip install -e '.[test]' && python -m pytest"
    assert test_line in (ROOT / ".ci" / "run").read_text().splitlines()


# The MCP SDK brings PyJWT and cryptography along; the rest of the server's stay out.
NOT_WITH_MCP = tuple(m for m in SERVER_MODULES if m not in ("jwt", "cryptography"))


@pytest.fixture(scope="session")
def mcp_venv(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """A fresh virtualenv with ``pip install '<this tree>[mcp]'``: the SDK and the MCP
    server, without the server extra."""
    root = tmp_path_factory.mktemp("mcp-install")
    source = root / "source"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".venv"
        ),
    )
    subprocess.run(
        [sys.executable, "-m", "venv", str(root / "venv")], check=True, timeout=INSTALL_SECONDS
    )
    venv = Venv(root / "venv")
    install = venv.run(
        venv.python, "-m", "pip", "install", "--quiet", f"{source}[mcp]", timeout=INSTALL_SECONDS
    )
    assert install.returncode == 0, install.stdout + install.stderr
    return venv


def test_the_mcp_extra_brings_none_of_the_servers_libraries(mcp_venv: Venv) -> None:
    shown = mcp_venv.python_code(
        "import importlib.util, json, sys\n"
        "import promptsvc.mcp, promptsvc.mcp.server\n"
        "print(json.dumps({n: importlib.util.find_spec(n) is not None for n in sys.argv[1:]}))",
        *NOT_WITH_MCP,
    )
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == dict.fromkeys(NOT_WITH_MCP, False)
    help_ = mcp_venv.run(mcp_venv.promptsvc, "mcp", "--help")
    assert help_.returncode == 0, help_.stderr
    assert "--environment" in help_.stdout


SERVE_OVER_MCP = """
import json, sys
import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

command, url, secret = sys.argv[1:]
env = {"PROMPTSVC_URL": url, "PROMPTSVC_ACCOUNT_ID": "acme", "PROMPTSVC_KEY_ID": "acme-read",
       "PROMPTSVC_KEY_SECRET": secret, "PROMPTSVC_CONFIG_DIR": "no-login-here"}

async def main():
    params = StdioServerParameters(command=command, args=["mcp"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_prompts()
        got = await session.get_prompt("greeting", {"name": "Ada"})
    print(json.dumps({"prompts": [p.name for p in listed.prompts],
                      "text": got.messages[0].content.text}))

anyio.run(main)
"""


def test_the_mcp_extra_serves_prompts_from_a_running_server(mcp_venv: Venv, server: Server) -> None:
    result = mcp_venv.python_code(
        SERVE_OVER_MCP, str(mcp_venv.promptsvc), server.base_url, READ_SECRET
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"prompts": ["greeting"], "text": "Hello Ada"}
