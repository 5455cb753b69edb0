"""A PostgreSQL server that goes away (``pg_ctl stop -m immediate``) and comes back, and a
database that is not UTF8.

A cluster of the test's own, so stopping it leaves the other tests' server alone.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from axtest import tool_path
from mesh.conftest import Cluster, cluster
from mesh.meshtest import Harness
from mesh.runnertest import Runners

# libpq ignores a password the server does not ask for (trust): it is here to be kept out.
PASSWORD = "sekrit-pw-7f3a"


@pytest.fixture
def outage(state_dir: Path) -> Iterator[tuple[Cluster, dict[str, str]]]:
    import os

    with cluster() as made:
        env = {
            "AX_STATE_DIR": str(state_dir),
            "PATH": os.environ.get("PATH", ""),
            "AX_MESH_DSN": f"{made.dsn} password={PASSWORD}",
        }
        yield made, env


def _call(env: dict[str, str], token: str, generation: int, tool: str, args: object) -> Any:
    return subprocess.run(
        [tool_path("mesh"), "call", tool, json.dumps(args)],
        capture_output=True,
        text=True,
        env={**env, "AX_MESH_TOKEN": token, "AX_MESH_LEASE": str(generation)},
        timeout=60,
        check=False,
    )


@pytest.mark.slow
def test_a_server_that_goes_away_and_comes_back(
    outage: tuple[Cluster, dict[str, str]], tmp_path: Path
) -> None:
    server, env = outage
    mesh = Harness(env)
    runners = Runners(env, tmp_path)
    try:
        lead = mesh.seat("lead", message=("eng",), revise=("team",))
        mesh.seat("eng", leased=False)
        runner = runners.start("eng", "--ttl", "20")
        runner.expect("started")
        lead.call("messages.send", to="eng", body="/claim before")
        runner.expect("turn.ended", outcome="done", timeout=60)

        server.stop()
        # A call while the server is away: exit 1, the server named, the password not.
        failed = _call(
            env,
            lead.token,
            lead.generation,
            "memory.write",
            {"store": "team", "path": "n.md", "text": "lost?"},
        )
        assert failed.returncode == 1, (failed.stdout, failed.stderr)
        assert str(server.sock) in failed.stderr and "PostgreSQL" in failed.stderr
        assert PASSWORD not in failed.stderr + failed.stdout
        # The library's connection broke under it: the same clear error, not a driver's.
        with pytest.raises(Exception, match="cannot reach the mesh's PostgreSQL server") as caught:
            lead.call("memory.read", store="team", path="n.md")
        assert PASSWORD not in str(caught.value)
        runner.expect("store.unreachable", timeout=30)
        time.sleep(3)  # longer than a renewal interval would be after a failure

        server.start()
        # The connection is replaced; nothing of the failed call was written.
        lead.refused("memory.read", "not_found", store="team", path="n.md")
        lead.call("messages.send", to="eng", body="/claim after")
        runner.expect("store.reachable", timeout=30)
        runner.expect("turn.ended", outcome="done", timeout=60)
        assert runner.proc.poll() is None, runner.stderr()
        assert runner.stop() == 0
    finally:
        runners.close()
        mesh.close()


def test_a_database_that_is_not_utf8_is_refused_before_anything_is_written(
    pg_server: str, state_dir: Path
) -> None:
    import os

    import psycopg

    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS mesh_ascii")
        conn.execute(
            "CREATE DATABASE mesh_ascii ENCODING 'SQL_ASCII' TEMPLATE template0 "
            "LC_COLLATE 'C' LC_CTYPE 'C'"
        )
    dsn = pg_server.replace("dbname=postgres", "dbname=mesh_ascii")
    env = {"AX_STATE_DIR": str(state_dir), "PATH": os.environ.get("PATH", ""), "AX_MESH_DSN": dsn}
    done = subprocess.run(
        [tool_path("mesh"), "seat", "list"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "server_encoding SQL_ASCII" in done.stderr and "UTF8" in done.stderr
    assert "mesh_ascii" in done.stderr
    with psycopg.connect(dsn, autocommit=True) as conn:
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
        assert tables.fetchone() == (0,)


def test_a_dsn_is_named_by_its_server_never_its_password() -> None:
    pytest.importorskip("psycopg")
    from ax_mesh.pg_store import scrub, server_of

    uri = f"postgresql://mesh:{PASSWORD}@db.example:6543/team"
    assert server_of(uri) == "db.example:6543/team"
    assert server_of(f"host=/run/pg user=mesh password={PASSWORD}") == "/run/pg:5432/mesh"
    assert scrub(f"auth failed for {PASSWORD}\n\tretry", uri) == "auth failed for *** retry"
    assert PASSWORD not in server_of("not a dsn = = =")
