"""The command as its own process where that is the point: on a terminal (a real
pseudo-terminal: tables, colors, NO_COLOR, the confirmation prompt), and against a
``promptsvc serve`` process on Redis that is killed in the middle of an apply."""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import time
from pathlib import Path

import pytest

from storage.redis import RedisStorage
from tests.cli.conftest import ORG, CliService, process_env, run_process
from tests.cli.test_cli_ascode import text_file, write
from tests.servers import ROOT, Server, bootstrap_file, free_port, promptsvc_command

ESC = "\x1b["


def on_terminal(env: dict[str, str], *argv: str, typed: str = "") -> tuple[int, str, str]:
    """Run ``promptsvc ARGS`` with stdin and stdout on a pseudo-terminal (stderr piped);
    ``typed`` is what a person types. Returns the status, the terminal's text (with
    ``\\r\\n`` made ``\\n``) and stderr."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        promptsvc_command(*argv),
        cwd=ROOT,
        env=process_env(env),
        stdin=terminal,
        stdout=terminal,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(terminal)
    if typed:
        os.write(controller, typed.encode())
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # EIO: the process closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(controller)
    assert process.stderr is not None
    err = process.stderr.read()
    status = process.wait(60)
    return status, b"".join(chunks).decode().replace("\r\n", "\n"), err


@pytest.fixture
def seeded(service: CliService) -> CliService:
    service.text_prompt("greeting", "Hi {{name}}\n", "Hello {{name}}\n", production=1)
    service.text_prompt("a-much-longer-prompt-name", "x")
    return service


def test_a_terminal_gets_an_aligned_table_with_a_header(seeded: CliService) -> None:
    status, out, err = on_terminal(seeded.env, "prompts", "list")
    assert status == 0, err
    header, *rows = out.splitlines()
    assert header == f"{ESC}1mNAME                       TYPE  PRODUCTION  LATEST  UPDATED{ESC}0m"
    assert rows[0].startswith("a-much-longer-prompt-name  text  -           1       20")
    assert rows[1].startswith("greeting                   text  1           2       20")
    # To the second on a terminal; exact (microseconds) when piped.
    assert rows[1].endswith("Z") and "." not in rows[1] and "T" not in rows[1]


def test_a_terminal_gets_a_colored_diff_unless_no_color(seeded: CliService) -> None:
    status, out, _ = on_terminal(seeded.env, "prompts", "diff", "greeting", "1", "2")
    assert status == 0
    assert f"{ESC}31m-Hi {{{{name}}}}{ESC}0m" in out
    assert f"{ESC}32m+Hello {{{{name}}}}{ESC}0m" in out
    assert f"{ESC}36m@@ -1 +1 @@{ESC}0m" in out

    status, plain, _ = on_terminal(
        {**seeded.env, "NO_COLOR": "1"}, "prompts", "diff", "greeting", "1", "2"
    )
    assert status == 0
    assert ESC not in plain
    assert "-Hi {{name}}\n+Hello {{name}}\n" in plain

    piped = run_process(seeded.env, "prompts", "diff", "greeting", "1", "2")
    assert piped.returncode == 0 and ESC not in piped.stdout
    assert plain == piped.stdout


def test_a_terminal_confirms_deleting_a_whole_prompt_by_its_name(seeded: CliService) -> None:
    status, _, err = on_terminal(seeded.env, "prompts", "delete", "greeting", typed="greet\n")
    assert status == 1
    assert "Type its name to confirm" in err and "not confirmed; nothing was deleted" in err
    assert seeded.storage.get_prompt(ORG, "greeting").latest_version == 2

    status, out, err = on_terminal(seeded.env, "prompts", "delete", "greeting", typed="greeting\n")
    assert status == 0, err
    assert out.endswith("deleted prompt greeting\n")
    assert [p.name for p in seeded.storage.list_prompts(ORG).items] == ["a-much-longer-prompt-name"]


WRITE_SECRET = "cli-process-write-0123456789"


@pytest.mark.redis
def test_a_server_killed_mid_apply_then_a_rerun_finishes_the_job(
    redis_url: str, tmp_path: Path
) -> None:
    bootstrap = bootstrap_file(tmp_path, {ORG: {"ci": (WRITE_SECRET, "Service Write")}})

    def serve() -> Server:
        port = free_port()
        command = promptsvc_command(
            "serve", "--port", str(port), "--storage", redis_url, "--bootstrap", str(bootstrap)
        )
        return Server(command, port).start()

    storage = RedisStorage.from_url(redis_url)
    names = [f"p{i:02d}" for i in range(30)]
    directory = tmp_path / "prompts"
    first = serve()
    try:
        env = {
            "PROMPTSVC_URL": first.base_url,
            "PROMPTSVC_ACCOUNT_ID": ORG,
            "PROMPTSVC_KEY_ID": "ci",
            "PROMPTSVC_KEY_SECRET": WRITE_SECRET,
        }
        for name in names:
            write(directory, name, text_file(f"{name} content"))
        apply = subprocess.Popen(
            promptsvc_command("apply", str(directory), "--promote"),
            cwd=ROOT,
            env=process_env(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while not storage.list_prompts(ORG).items and time.monotonic() < deadline:
            time.sleep(0.005)  # watching another process; there is no event to wait on
        assert first.process is not None
        os.killpg(first.process.pid, signal.SIGKILL)  # no goodbye: mid-request if it falls so
        first.process.wait(15)
        out, err = apply.communicate(timeout=120)
        assert apply.returncode == 1, out
        assert "(no answer, request id " in err
        done = len(storage.list_prompts(ORG, limit=200).items)
        assert 0 < done < len(names)
    finally:
        first.stop()

    second = serve()
    try:
        env["PROMPTSVC_URL"] = second.base_url
        rerun = run_process(env, "apply", directory, "--promote")
        assert rerun.returncode == 0, rerun.stderr
        for name in names:
            versions = storage.list_versions(ORG, name).items
            assert [v.version for v in versions] == [1]
            assert versions[0].status == "published"
            assert versions[0].content == f"{name} content"
        assert run_process(env, "plan", directory, "--promote").returncode == 0
    finally:
        second.stop()
        storage.close()


@pytest.mark.parametrize("argv", [["prompts", "history", "greeting"], ["prompts", "list"]])
def test_output_closed_early_stops_the_command_quietly(seeded: CliService, argv: list[str]) -> None:
    """`promptsvc prompts history greeting | head -1`: the reader goes away; the command
    stops without a traceback, with the status of a process that SIGPIPE ended."""
    process = subprocess.Popen(
        promptsvc_command(*argv),
        cwd=ROOT,
        env=process_env(seeded.env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # before the command writes anything: its first write fails
    err = process.stderr.read()
    assert process.wait(60) == 128 + signal.SIGPIPE
    assert err == ""

    shell = subprocess.run(
        ["bash", "-c", 'set -o pipefail; "$@" | head -1', "bash", *promptsvc_command(*argv)],
        cwd=ROOT,
        env=process_env(seeded.env),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert shell.stderr == "" and len(shell.stdout.splitlines()) == 1
