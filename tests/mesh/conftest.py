"""The mesh fixtures: each contract test runs on SQLite and on a real PostgreSQL server.

PostgreSQL is a throwaway cluster (``initdb`` in a temp folder, a unix socket only,
started once per session and stopped after it). Its binaries are found on PATH or
where Debian puts them (/usr/lib/postgresql/<version>/bin); when they are absent the
PostgreSQL cases skip saying so, never pass. The server refuses to run as root, so as
root the cluster is owned by and run as uid 65534.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from mesh.meshtest import Harness

NOBODY = 65534


def pg_bindir() -> Path | None:
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).parent
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    return versions[-1].parent if versions else None


def _as_owner(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("PostgreSQL refuses root, and setpriv (to run it as uid 65534) is missing")
    return [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]


class Cluster:
    """A throwaway PostgreSQL cluster: ``initdb`` in a temp folder, a unix socket only."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.base = Path(tempfile.mkdtemp(prefix="ax-mesh-pg-"))
        self.data, self.sock, self.log = self.base / "data", self.base / "sock", self.base / "log"
        self.sock.mkdir()
        if os.geteuid() == 0:
            for path in (self.base, self.sock):
                os.chown(path, NOBODY, NOBODY)
        self.env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}
        init = self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "mesh",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        if init.returncode != 0:
            self.remove()
            pytest.fail(f"initdb failed: {init.stderr[-2000:]}")
        self.dsn = f"host={self.sock} port=5432 user=mesh dbname=postgres"

    def _run(self, tool: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            _as_owner([str(self.bindir / tool), *args]),
            capture_output=True,
            text=True,
            env=self.env,
            timeout=120,
            check=False,
        )

    def start(self) -> None:
        options = f"-k {self.sock} -c listen_addresses='' -c fsync=off -c max_connections=100"
        started = self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "start",
        )
        if started.returncode != 0:
            text = self.log.read_text() if self.log.exists() else started.stderr
            pytest.fail(f"pg_ctl start failed: {text[-2000:]}")

    def stop(self) -> None:
        """Stop at once, as a crash or a killed server would (no shutdown checkpoint)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def remove(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


@contextmanager
def cluster() -> Iterator[Cluster]:
    """A started throwaway cluster, stopped and removed after; skips without PostgreSQL."""
    bindir = pg_bindir()
    if bindir is None:
        pytest.skip(
            "PostgreSQL's initdb and pg_ctl are not installed (apt-get install postgresql); "
            "the PostgreSQL backend is not tested here"
        )
    made = Cluster(bindir)
    try:
        made.start()
        yield made
    finally:
        made.stop()
        made.remove()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """A DSN of a running throwaway PostgreSQL cluster (the maintenance database)."""
    with cluster() as made:
        yield made.dsn


def fresh_pg(dsn: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS public CASCADE")
        conn.execute("CREATE SCHEMA public")


@pytest.fixture(params=["sqlite", "postgresql"])
def backend_env(request: pytest.FixtureRequest, state_dir: Path) -> dict[str, str]:
    """The environment a mesh opens from: a private state root, and for PostgreSQL a DSN
    of an emptied database."""
    env = {"AX_STATE_DIR": str(state_dir), "PATH": os.environ.get("PATH", "")}
    if request.param == "postgresql":
        dsn = request.getfixturevalue("pg_server")
        fresh_pg(dsn)
        env["AX_MESH_DSN"] = dsn
    return env


@pytest.fixture
def mesh(backend_env: dict[str, str]) -> Iterator[Harness]:
    harness = Harness(backend_env)
    try:
        yield harness
    finally:
        harness.close()
