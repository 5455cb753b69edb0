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


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """A DSN of a running throwaway PostgreSQL cluster (the maintenance database)."""
    bindir = pg_bindir()
    if bindir is None:
        pytest.skip(
            "PostgreSQL's initdb and pg_ctl are not installed (apt-get install postgresql); "
            "the PostgreSQL backend is not tested here"
        )
    base = Path(tempfile.mkdtemp(prefix="ax-mesh-pg-"))
    data, sock, log = base / "data", base / "sock", base / "log"
    sock.mkdir()
    if os.geteuid() == 0:
        for path in (base, sock):
            os.chown(path, NOBODY, NOBODY)
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}
    init = subprocess.run(
        _as_owner(
            [
                str(bindir / "initdb"),
                "-D",
                str(data),
                "-U",
                "mesh",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ]
        ),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    if init.returncode != 0:
        shutil.rmtree(base, ignore_errors=True)
        pytest.fail(f"initdb failed: {init.stderr[-2000:]}")
    options = f"-k {sock} -c listen_addresses='' -c fsync=off -c max_connections=100"
    start = subprocess.run(
        _as_owner(
            [
                str(bindir / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(log),
                "-o",
                options,
                "-w",
                "-t",
                "60",
                "start",
            ]
        ),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    if start.returncode != 0:
        text = log.read_text() if log.exists() else start.stderr
        shutil.rmtree(base, ignore_errors=True)
        pytest.fail(f"pg_ctl start failed: {text[-2000:]}")
    try:
        yield f"host={sock} port=5432 user=mesh dbname=postgres"
    finally:
        subprocess.run(
            _as_owner([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
            capture_output=True,
            env=env,
            timeout=60,
            check=False,
        )
        shutil.rmtree(base, ignore_errors=True)


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
