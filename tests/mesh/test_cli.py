"""The installed ax-mesh script: a person's verbs, a seat's calls and the exit codes."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest
from axtest import CliRunner, tool_path

from ax_mesh.cli import main


def mesh_cli(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [tool_path("mesh"), *argv], capture_output=True, text=True, env=env, timeout=60
    )


@pytest.fixture
def people(state_dir: Path, run_cli: CliRunner) -> dict[str, str]:
    # The CLI is a thin front over the library the contract tests run on both backends;
    # here it runs on the default one. A person's verbs run in-process, a seat's calls
    # through the installed script.
    env = {"AX_STATE_DIR": str(state_dir), "PATH": os.environ.get("PATH", "")}
    assert run_cli(main, ["store", "add", "team"]).exit_code == 0
    added = run_cli(
        main, ["seat", "add", "eng", "--role", "engineer", "--write", "team", "--message", "lead"]
    )
    assert added.exit_code == 0, added.stderr
    assert "does not exist yet" in added.stderr
    assert (
        run_cli(
            main, ["seat", "add", "lead", "--role", "lead", "--revise", "team", "--message", "eng"]
        ).exit_code
        == 0
    )
    return env


def seat_env(env: dict[str, str], seat: str) -> dict[str, str]:
    token_file = Path(env["AX_STATE_DIR"]) / "mesh" / "seats" / f"{seat}.token"
    lease = json.loads(mesh_cli(env, "lease", "acquire", seat, "--holder", "t").stdout)
    return {
        **env,
        "AX_MESH_TOKEN": token_file.read_text().strip(),
        "AX_MESH_LEASE": str(lease["generation"]),
        "AX_MESH_SEAT": seat,
    }


def test_exit_codes_0_1_2_and_4(people: dict[str, str]) -> None:
    eng = seat_env(people, "eng")
    ok = mesh_cli(
        eng,
        "call",
        "memory.write",
        '{"store":"team","path":"a.md","text":"x","expected_revision":0}',
    )
    assert ok.returncode == 0 and json.loads(ok.stdout)["revision"] == 1
    conflict = mesh_cli(
        eng,
        "call",
        "memory.write",
        '{"store":"team","path":"a.md","text":"y","expected_revision":0}',
    )
    assert conflict.returncode == 1
    assert json.loads(conflict.stdout)["error"] == {
        "code": "conflict",
        "message": "team/a.md is at revision 1, not 0; nothing was written",
        "current_revision": 1,
        "author": "eng",
        "hint": "read it again, then retry with expected_revision set to current_revision",
    }
    bad = mesh_cli(eng, "call", "memory.write", '{"store":"team","path":"a.md","txt":"y"}')
    assert bad.returncode == 2 and "'txt'" in bad.stderr and bad.stdout == ""
    assert mesh_cli(eng, "call", "memory.write", "{not json").returncode == 2
    assert mesh_cli(eng, "call", "no.such.tool").returncode == 2
    # A newer lease fences this process: exit 4, nothing written.
    mesh_cli(people, "lease", "acquire", "eng", "--holder", "t")
    fenced = mesh_cli(eng, "call", "memory.append", '{"store":"team","path":"a.md","text":"z"}')
    assert fenced.returncode == 4, fenced.stderr
    assert json.loads(fenced.stdout)["error"]["code"] == "fenced"
    fresh = seat_env(people, "eng")
    read = json.loads(
        mesh_cli(fresh, "call", "memory.read", '{"store":"team","path":"a.md"}').stdout
    )
    assert read["text"] == "x"


def test_another_seat_s_token_and_no_token_are_refused(people: dict[str, str]) -> None:
    eng = seat_env(people, "eng")
    lead = seat_env(people, "lead")
    borrowed = {**eng, "AX_MESH_TOKEN": lead["AX_MESH_TOKEN"]}
    proc = mesh_cli(borrowed, "call", "self")
    assert proc.returncode == 1 and "not seat 'eng'" in proc.stderr
    nothing = {k: v for k, v in eng.items() if k != "AX_MESH_TOKEN"}
    assert mesh_cli(nothing, "call", "self").returncode == 2
    no_lease = {**eng, "AX_MESH_LEASE": "x"}
    assert mesh_cli(no_lease, "call", "self").returncode == 2


def test_tokens_are_private_files_and_never_printed(people: dict[str, str]) -> None:
    folder = Path(people["AX_STATE_DIR"]) / "mesh" / "seats"
    token = (folder / "eng.token").read_text().strip()
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(folder / "eng.token").st_mode) == 0o600
    listing = mesh_cli(people, "seat", "list")
    assert listing.returncode == 0 and token not in listing.stdout
    assert "token_sha256" not in listing.stdout
    rotated = mesh_cli(people, "seat", "rotate-token", "eng")
    assert rotated.returncode == 0
    stale = {**seat_env(people, "eng"), "AX_MESH_TOKEN": token}
    assert mesh_cli(stale, "call", "self").returncode == 1


def test_list_shows_the_seat_s_tools(people: dict[str, str]) -> None:
    listed = json.loads(mesh_cli(seat_env(people, "eng"), "list").stdout)
    names = [t["name"] for t in listed["tools"]]
    assert listed["seat"] == "eng" and "memory.write" in names and "messages.send" in names
    schema = next(t for t in listed["tools"] if t["name"] == "memory.write")["arguments"]
    assert "expected_revision" in schema["properties"]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["seat", "add", "x", "--role", "r", "--read", "nosuch"], "does not exist"),
        (["seat", "add", "X!", "--role", "r"], "seat name"),
        (["seat", "add", "x", "--role", "r", "--read", "@eng"], "personal store"),
        (["seat", "add", "x", "--role", "r", "--timezone", "Mars/Base"], "--timezone"),
        (["seat", "add", "x", "--role", "r", "--connection", "tracker"], "--connection"),
        (["seat", "add", "eng", "--role", "r"], "already exists"),
        (["store", "add", "@x"], "personal store"),
        (["lease", "acquire", "eng", "--ttl", "0"], "a lease lasts"),
    ],
)
def test_a_person_s_bad_input_is_refused_with_exit_2(
    people: dict[str, str], run_cli: CliRunner, argv: list[str], needle: str
) -> None:
    before = run_cli(main, ["seat", "list"]).stdout
    proc = run_cli(main, argv)
    assert proc.exit_code == 2, proc.stderr
    assert needle in proc.stderr
    assert run_cli(main, ["seat", "list"]).stdout == before


def test_a_person_adds_a_connection_and_a_seat_invokes_it(
    state_dir: Path, run_cli: CliRunner, tmp_path: Path
) -> None:
    env = {"AX_STATE_DIR": str(state_dir), "PATH": os.environ.get("PATH", "")}
    folder = tmp_path / "trk"
    added = run_cli(main, ["connection", "add", "tracker", "--path", str(folder)])
    assert added.exit_code == 0, added.stderr
    bad = run_cli(main, ["connection", "add", "t2", "--kind", "jira"])
    assert bad.exit_code == 2 and "not a connection kind" in bad.stderr
    refused = run_cli(main, ["seat", "add", "eng", "--role", "e", "--connection", "trk=task.read"])
    assert refused.exit_code == 2 and "connection 'trk' does not exist" in refused.stderr
    made = run_cli(
        main, ["seat", "add", "eng", "--role", "e", "--connection", "tracker=task.write"]
    )
    assert made.exit_code == 0, made.stderr
    listed = json.loads(run_cli(main, ["connection", "list"]).stdout)
    assert listed["connections"][0]["config"] == {"kind": "file-tracker", "path": str(folder)}
    eng = seat_env(env, "eng")
    call = mesh_cli(
        eng,
        "call",
        "connections.invoke",
        '{"connection": "tracker", "operation": "task.write", "params": {"title": "T"}}',
    )
    assert call.returncode == 0, call.stderr
    assert json.loads(call.stdout)["receipt"] == "TRK-1"
    assert (folder / "tasks" / "1.json").exists()
