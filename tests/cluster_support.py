"""A throwaway local Redis Cluster for tests and benchmarks.

:class:`LocalCluster` starts ``redis-server --cluster-enabled yes`` processes on free
ports in a temporary directory, joins them with ``redis-cli --cluster create``, waits for
``cluster_state:ok`` everywhere and tears it all down again. It can stop and restart one
node on the same port with the same ``nodes.conf`` (a restart empties that node's script
cache; a stop is an outage of its shard).

:func:`running_cluster` is the body of the fixtures that need one (tests/conftest.py):
without ``redis-server``/``redis-cli`` it skips with the reason; under
``PROMPTSVC_TEST_REQUIRE_REDIS=1`` (CI) it fails instead.

The nodes run with ``cluster-require-full-coverage no``: when one primary is down the
others keep serving their own slots, which is what a deployment wants (docs/deployment.md)
and what the failure tests check.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Self

import pytest
import redis

from tests import servers
from tests.servers import free_ports

REQUIRE_REDIS = os.environ.get("PROMPTSVC_TEST_REQUIRE_REDIS") == "1"
HASH_SLOTS = 16384


class ClusterStartError(RuntimeError):
    """The local cluster could not be started; the message says where it stopped."""


def missing_binaries() -> str | None:
    """Why no local cluster can be started here, or None when it can."""
    missing = [b for b in ("redis-server", "redis-cli") if shutil.which(b) is None]
    if missing:
        return f"{' and '.join(missing)} not on PATH: cannot start a local Redis Cluster"
    return None


class Node:
    """One ``redis-server`` process of the cluster (standalone when ``bus_port`` is 0);
    it keeps its port across restarts."""

    def __init__(self, port: int, bus_port: int, workdir: Path, node_timeout_ms: int) -> None:
        self.port = port
        self.bus_port = bus_port
        self.dir = workdir / str(port)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.node_timeout_ms = node_timeout_ms
        self.process: subprocess.Popen[bytes] | None = None
        self.frozen = False

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def command(self) -> list[str]:
        common = [
            "redis-server",
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--daemonize", "no",
            "--dir", str(self.dir),
            "--logfile", str(self.dir / "redis.log"),
        ]  # fmt: skip
        if not self.bus_port:  # a standalone server (LocalRedis)
            return common
        return [
            *common,
            "--cluster-enabled", "yes",
            # An explicit bus port: port + 10000 may be taken or beyond 65535.
            "--cluster-port", str(self.bus_port),
            "--cluster-config-file", str(self.dir / "nodes.conf"),
            "--cluster-node-timeout", str(self.node_timeout_ms),
            "--cluster-require-full-coverage", "no",
        ]  # fmt: skip

    def start(self) -> None:
        self.frozen = False
        self.process = subprocess.Popen(
            self.command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    def client(self, timeout: float = 1.0) -> redis.Redis:
        return redis.Redis(
            host="127.0.0.1",
            port=self.port,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            decode_responses=True,
        )

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def wait_answering(self, deadline: float) -> None:
        while True:
            if not self.running():
                raise ClusterStartError(
                    f"redis-server on port {self.port} exited:\n{self.log_tail()}"
                )
            try:
                with self.client() as c:
                    c.ping()
                return
            except redis.RedisError:
                if time.monotonic() > deadline:
                    raise ClusterStartError(
                        f"redis-server on port {self.port} does not answer:\n{self.log_tail()}"
                    ) from None
                time.sleep(0.05)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Stop the process and wait for it; SIGKILL if it lingers."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process = None

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join((self.dir / "redis.log").read_text().splitlines()[-lines:])
        except OSError:
            return "(no log)"


_RUNNING: set[LocalCluster | LocalRedis | Gunicorn] = set()


@atexit.register
def _stop_leftovers() -> None:
    # Safety net for an interrupted run: never leave our processes behind.
    for started in list(_RUNNING):
        started.stop()


class LocalCluster:
    """``primaries`` primaries (plus ``replicas_per_primary`` replicas each) on free ports.

    Use as a context manager, or call :meth:`start` and :meth:`stop`.
    """

    def __init__(
        self,
        primaries: int = 3,
        replicas_per_primary: int = 0,
        node_timeout_ms: int = 2000,
    ) -> None:
        self.primaries = primaries
        self.replicas_per_primary = replicas_per_primary
        self.node_timeout_ms = node_timeout_ms
        self.nodes: list[Node] = []
        self._workdir: Path | None = None

    # -- lifecycle
    def start(self, timeout: float = 30.0) -> LocalCluster:
        problem = missing_binaries()
        if problem:
            raise ClusterStartError(problem)
        self._workdir = Path(tempfile.mkdtemp(prefix="promptsvc-cluster-"))
        count = self.primaries * (1 + self.replicas_per_primary)
        ports = free_ports(2 * count)
        self.nodes = [
            Node(ports[2 * i], ports[2 * i + 1], self._workdir, self.node_timeout_ms)
            for i in range(count)
        ]
        _RUNNING.add(self)
        try:
            deadline = time.monotonic() + timeout
            for node in self.nodes:
                node.start()
            for node in self.nodes:
                node.wait_answering(deadline)
            self._create(deadline)
            self.wait_healthy(deadline - time.monotonic())
        except BaseException:
            self.stop()
            raise
        return self

    def _create(self, deadline: float) -> None:
        args = ["redis-cli", "--cluster", "create", *(n.address for n in self.nodes)]
        args += ["--cluster-replicas", str(self.replicas_per_primary), "--cluster-yes"]
        try:
            result = subprocess.run(
                args,
                capture_output=True,
                text=True,
                timeout=max(1.0, deadline - time.monotonic()),
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise ClusterStartError(f"redis-cli --cluster create timed out: {exc}") from None
        if result.returncode != 0:
            raise ClusterStartError(
                f"redis-cli --cluster create failed ({result.returncode}):\n"
                f"{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
            )

    def stop(self) -> None:
        """Stop every node and delete the working directory."""
        for node in self.nodes:
            node.stop(signal.SIGKILL)  # the data is throwaway: no need for a clean shutdown
        _RUNNING.discard(self)
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses
    @property
    def url(self) -> str:
        """``redis+cluster://`` URL naming every node (any one would do; all is sturdier)."""
        return "redis+cluster://" + ",".join(n.address for n in self.nodes)

    @property
    def pids(self) -> list[int]:
        return [n.pid for n in self.nodes if n.pid is not None]

    # -- state
    def node_info(self, node: Node) -> dict[str, str]:
        with node.client() as c:
            raw = c.execute_command("CLUSTER", "INFO")
        text = raw if isinstance(raw, str) else str(raw)
        return dict(
            line.split(":", 1) for line in text.splitlines() if ":" in line and line.strip()
        )

    def _healthy(self) -> bool:
        expected = str(len(self.nodes))
        for node in self.nodes:
            try:
                info = self.node_info(node)
            except redis.RedisError:
                return False
            if (
                info.get("cluster_state") != "ok"
                or info.get("cluster_slots_ok") != str(HASH_SLOTS)
                or info.get("cluster_known_nodes") != expected
            ):
                return False
            with node.client() as c:
                role = c.info("replication")
                if role.get("role") == "slave" and role.get("master_link_status") != "up":
                    return False
                # Clients learn the replicas from CLUSTER SLOTS, which lists a replica
                # only once the primary has heard its replication offset.
                ranges = c.execute_command("CLUSTER", "SLOTS")
                if any(len(r) - 2 != 1 + self.replicas_per_primary for r in ranges):
                    return False
        return True

    def wait_healthy(self, timeout: float = 30.0) -> None:
        """Wait until every node reports the whole cluster ok (all slots on live nodes)."""
        deadline = time.monotonic() + timeout
        while not self._healthy():
            if time.monotonic() > deadline:
                tails = "\n".join(f"-- {n.address}\n{n.log_tail(8)}" for n in self.nodes)
                raise ClusterStartError(f"cluster not healthy after {timeout:.0f}s:\n{tails}")
            time.sleep(0.1)

    def primary_nodes(self) -> list[Node]:
        """The nodes that are primaries right now."""
        result = []
        for node in self.nodes:
            with node.client() as c:
                if c.info("replication").get("role") == "master":
                    result.append(node)
        return result

    def node_for_slot(self, slot: int) -> Node:
        """The live primary serving ``slot``, per CLUSTER SHARDS-free CLUSTER SLOTS."""
        for node in self.nodes:
            if not node.running():
                continue
            with node.client() as c:
                for start, end, primary, *_ in c.execute_command("CLUSTER", "SLOTS"):
                    if int(start) <= slot <= int(end):
                        port = int(primary[1])
                        return next(n for n in self.nodes if n.port == port)
        raise LookupError(f"no live node knows slot {slot}")

    def keyslot(self, key: str) -> int:
        node = next(n for n in self.nodes if n.running())
        with node.client() as c:
            return int(c.execute_command("CLUSTER", "KEYSLOT", key))

    def wait_replicated(self, timeout: float = 10.0) -> None:
        """Wait until every replica has applied everything its primary has written."""
        deadline = time.monotonic() + timeout
        for node in self.nodes:
            with node.client() as c:
                info = c.info("replication")
            if info.get("role") != "slave":
                continue
            primary = next(n for n in self.nodes if n.port == int(info["master_port"]))
            while True:
                with primary.client() as p, node.client() as r:
                    wanted = int(p.info("replication")["master_repl_offset"])
                    done = int(r.info("replication")["slave_repl_offset"])
                if done >= wanted:
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"replica {node.address} stuck at {done} < {wanted}")
                time.sleep(0.02)

    def flush(self) -> None:
        """Empty every primary (this cluster is ours alone)."""
        for node in self.primary_nodes():
            with node.client() as c:
                c.flushall()

    # -- faults
    def stop_node(self, node: Node, save: bool = False) -> None:
        """Take one node down (its shard becomes unreachable).

        ``save=True`` shuts it down with SHUTDOWN SAVE, so a restart reloads its data
        (the nodes run without automatic persistence); otherwise its data is lost.
        """
        if save and node.running():
            with node.client(timeout=10) as c:
                c.shutdown(save=True)
        node.stop()

    def freeze_node(self, node: Node) -> None:
        """SIGSTOP: the process keeps its sockets but answers nothing (a hung host)."""
        assert node.process is not None
        node.process.send_signal(signal.SIGSTOP)
        node.frozen = True

    def thaw_node(self, node: Node) -> None:
        assert node.process is not None
        node.process.send_signal(signal.SIGCONT)
        node.frozen = False

    def restart_node(self, node: Node, timeout: float = 30.0) -> None:
        """Start ``node`` again on its port with its nodes.conf and wait for a healthy cluster.

        The new process has an empty script cache.
        """
        if node.running():
            node.stop()
        node.start()
        deadline = time.monotonic() + timeout
        node.wait_answering(deadline)
        self.wait_healthy(deadline - time.monotonic())


class LocalRedis:
    """One standalone ``redis-server`` with the cluster nodes' settings (no persistence),
    on a free port: the single-Redis side of side-by-side figures."""

    def __init__(self) -> None:
        self._workdir = Path(tempfile.mkdtemp(prefix="promptsvc-redis-"))
        self.node = Node(free_ports(1)[0], 0, self._workdir, 0)

    @property
    def url(self) -> str:
        return f"redis://{self.node.address}/0"

    def start(self, timeout: float = 10.0) -> LocalRedis:
        problem = missing_binaries()
        if problem:
            raise ClusterStartError(problem)
        _RUNNING.add(self)
        self.node.start()
        try:
            self.node.wait_answering(time.monotonic() + timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        self.node.stop(signal.SIGKILL)
        _RUNNING.discard(self)
        shutil.rmtree(self._workdir, ignore_errors=True)

    def __enter__(self) -> LocalRedis:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Gunicorn(servers.Gunicorn):
    """One "host" of the service; like the clusters, stopped at exit if a run is
    interrupted before its own stop."""

    def start(self, ready_path: str = "/readyz", timeout: float = servers.START_SECONDS) -> Self:
        _RUNNING.add(self)
        return super().start(ready_path, timeout)

    def stop(self) -> None:
        super().stop()
        _RUNNING.discard(self)


def skip_or_fail(reason: str) -> None:
    """Skip the test with ``reason``; fail it instead under PROMPTSVC_TEST_REQUIRE_REDIS=1."""
    if REQUIRE_REDIS:
        pytest.fail(f"{reason} (PROMPTSVC_TEST_REQUIRE_REDIS=1)")
    pytest.skip(reason)


def running_cluster(primaries: int = 3, replicas_per_primary: int = 0) -> Iterator[LocalCluster]:
    """Body of a fixture yielding a started LocalCluster, stopped afterwards; skips (or
    fails under PROMPTSVC_TEST_REQUIRE_REDIS=1) when one cannot be started here."""
    problem = missing_binaries()
    if problem:
        skip_or_fail(problem)
    cluster = LocalCluster(primaries=primaries, replicas_per_primary=replicas_per_primary)
    try:
        cluster.start()
    except ClusterStartError as exc:
        skip_or_fail(f"local Redis Cluster did not start: {exc}")
    try:
        yield cluster
    finally:
        cluster.stop()
