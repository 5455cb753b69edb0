"""The ax-policy CLI, in-process and as the installed console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from axtest import CliRunner, tool_path

from ax_policy import add_durable_grant
from ax_policy.cli import main
from libcommon import clock


def console_script() -> str:
    return tool_path("policy")


KEY = "f" * 64


@pytest.fixture
def fixed_path(monkeypatch: pytest.MonkeyPatch, system_path: str) -> None:
    monkeypatch.setenv("PATH", system_path)


# --- review-command -------------------------------------------------------------------


def test_review_command_read_only(run_cli: CliRunner, project: Path, fixed_path: None) -> None:
    result = run_cli(
        main, ["review-command", "-C", str(project), "--", "grep", "-rn", "TODO", "src"]
    )
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["verdict"] == "read-only" and out["executable"].endswith("/grep")
    assert out["argv"] == ["grep", "-rn", "TODO", "src"]
    assert result.stderr == ""


def test_review_command_words_are_requoted(
    run_cli: CliRunner, project: Path, fixed_path: None
) -> None:
    # The shell already removed the quotes around *.py; the CLI quotes the words again.
    result = run_cli(
        main, ["review-command", "-C", str(project), "--", "find", ".", "-name", "*.py"]
    )
    assert result.exit_code == 0 and json.loads(result.stdout)["argv"][-1] == "*.py"


def test_review_command_single_string(run_cli: CliRunner, project: Path, fixed_path: None) -> None:
    result = run_cli(main, ["review-command", "-C", str(project), "cat README.md | sh"])
    assert result.exit_code == 1
    out = json.loads(result.stdout)
    assert out["verdict"] == "ask" and out["reasons"][0].startswith("command 2 of 2 (sh): ")


def test_review_command_deny(run_cli: CliRunner, project: Path, fixed_path: None) -> None:
    result = run_cli(main, ["review-command", "-C", str(project), "rm -rf ."])
    assert result.exit_code == 1 and json.loads(result.stdout)["verdict"] == "deny"


def test_review_command_needs_a_command(run_cli: CliRunner, project: Path) -> None:
    result = run_cli(main, ["review-command", "-C", str(project)])
    assert result.exit_code == 2 and "Missing argument" in result.stderr and result.stdout == ""


def test_missing_workspace_is_a_usage_error(run_cli: CliRunner, tmp_path: Path) -> None:
    result = run_cli(main, ["review-command", "-C", str(tmp_path / "nope"), "ls"])
    assert result.exit_code == 2 and "is not a directory" in result.stderr


# --- check-path ----------------------------------------------------------------------


def test_check_path(run_cli: CliRunner, project: Path) -> None:
    ok = run_cli(main, ["check-path", "-C", str(project), "src/app.py"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)["ok"] is True
    protected = run_cli(main, ["check-path", "-C", str(project), "--write", ".git/config"])
    out = json.loads(protected.stdout)
    assert protected.exit_code == 1 and out["ok"] is False and out["protected"] is True
    secret = json.loads(run_cli(main, ["check-path", "-C", str(project), ".env"]).stdout)
    assert secret["secret"] is True and secret["ok"] is False
    outside = run_cli(main, ["check-path", "-C", str(project), "escape/passwd"])
    assert outside.exit_code == 1 and json.loads(outside.stdout)["insideWorkspace"] is False


def test_check_path_invalid(run_cli: CliRunner, project: Path) -> None:
    result = run_cli(main, ["check-path", "-C", str(project), ""])
    out = json.loads(result.stdout)
    assert result.exit_code == 1 and out["valid"] is False and "empty" in out["invalidReason"]


def test_check_path_and_decide_give_one_answer(
    run_cli: CliRunner, project: Path, fixed_path: None
) -> None:
    # Whatever decide refuses to write, check-path --write does not call ok, and the
    # other way round, with the same rule.
    for raw in (".", "src", "src/app.py", ".git/config", "escape/x", "hardlink.txt", "new.txt"):
        check = run_cli(main, ["check-path", "-C", str(project), "--write", raw])
        facts = json.loads(check.stdout)
        request = {"tool": "write_file", "facts": {"writes": [raw]}}
        decided = run_cli(main, ["decide", "-C", str(project)], stdin=json.dumps(request))
        decision = json.loads(decided.stdout)
        assert facts["ok"] is (decision["verdict"] == "allow"), (raw, facts, decision)
        assert (check.exit_code == 0) is facts["ok"]
    root = json.loads(run_cli(main, ["check-path", "-C", str(project), "--write", "."]).stdout)
    assert root["workspaceRoot"] is True and root["ok"] is False
    # Reading the workspace folder needs no question.
    read_root = json.loads(run_cli(main, ["check-path", "-C", str(project), "."]).stdout)
    assert read_root["ok"] is True


def test_check_path_reports_hard_links(run_cli: CliRunner, project: Path) -> None:
    result = run_cli(main, ["check-path", "-C", str(project), "hardlink.txt"])
    out = json.loads(result.stdout)
    assert result.exit_code == 1 and out["ok"] is False
    assert out["hardLinked"] is True and "3 hard links" in out["hardLinkedReason"]
    assert out["insideWorkspace"] is True and out["special"] is False


def unresolvable_paths() -> list[str]:
    paths = ["a" * 300, "src/" + "b" * 256 + "/x.txt"]
    try:
        os.readlink("/proc/1/root")
    except PermissionError:
        paths.append("/proc/1/root/etc/passwd")
    return paths


@pytest.mark.parametrize("raw", unresolvable_paths())
def test_check_path_of_an_unresolvable_path_is_invalid_not_a_crash(project: Path, raw: str) -> None:
    # The installed console script: a traceback here is what ax-mcp reported as a crash.
    for flags in ([], ["--write"]):
        proc = subprocess.run(
            [console_script(), "check-path", "-C", str(project), *flags, raw],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert "Traceback" not in proc.stderr, proc.stderr
        assert proc.returncode == 1, proc.stderr
        out = json.loads(proc.stdout)
        assert out["valid"] is False and out["ok"] is False
        assert out["invalidReason"].startswith("it cannot be resolved: ")


def test_review_of_an_unresolvable_path_asks(project: Path, system_path: str) -> None:
    for raw in unresolvable_paths():
        proc = subprocess.run(
            [console_script(), "review-command", "-C", str(project), "--", "cat", raw],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PATH": system_path},
        )
        assert "Traceback" not in proc.stderr, proc.stderr
        out = json.loads(proc.stdout)
        assert proc.returncode == 1 and out["verdict"] == "ask"
        assert "cannot be resolved" in out["reasons"][0]


# --- decide --------------------------------------------------------------------------


def test_decide(run_cli: CliRunner, project: Path) -> None:
    request = {"tool": "write_file", "facts": {"writes": ["src/new.py"]}}
    result = run_cli(main, ["decide", "-C", str(project)], stdin=json.dumps(request))
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert (out["verdict"], out["class"], out["requiresSnapshot"]) == ("allow", "reversible", True)


def test_decide_deny_is_still_exit_0(run_cli: CliRunner, project: Path) -> None:
    request = {"tool": "write_file", "facts": {"writes": [".git/hooks/pre-commit"]}}
    result = run_cli(main, ["decide", "-C", str(project), "-"], stdin=json.dumps(request))
    assert result.exit_code == 0 and json.loads(result.stdout)["verdict"] == "deny"


def test_decide_uses_durable_grants(run_cli: CliRunner, project: Path, state_dir: Path) -> None:
    request = {"tool": "run_check", "facts": {"check": {"kind": "test", "replayKey": KEY}}}
    before = json.loads(
        run_cli(main, ["decide", "-C", str(project)], stdin=json.dumps(request)).stdout
    )
    assert before["verdict"] == "ask"
    add_durable_grant(state_dir, project, replay_key=KEY)
    after = json.loads(
        run_cli(main, ["decide", "-C", str(project)], stdin=json.dumps(request)).stdout
    )
    assert after["verdict"] == "allow" and after["rule"] == "check-replay-grant"


def test_decide_uses_workspace_config(run_cli: CliRunner, project: Path) -> None:
    (project / ".ax").mkdir()
    (project / ".ax" / "config.json").write_text('{"protectedPaths": ["docs"]}')
    request = {"tool": "write_file", "facts": {"writes": ["docs/guide.md"]}}
    out = json.loads(
        run_cli(main, ["decide", "-C", str(project)], stdin=json.dumps(request)).stdout
    )
    assert out["rule"] == "write-protected"


@pytest.mark.parametrize(
    ("stdin", "needle"),
    [
        ("", "no request"),
        ("{", "not valid JSON"),
        ("[]", "must be a JSON object"),
        ('{"tool": "x", "facts": {"bogus": 1}}', "'facts.bogus': unknown field"),
        ('{"tool": "x"}', "'facts'"),
        ('{"tool": "x", "facts": {}, "sandbox": {"enforced": "maybe"}}', "sandbox.enforced"),
        ('{"tool": "x y", "facts": {}}', "'tool'"),
        (
            '{"tool": "x", "facts": {}, "sessionGrants": [{"tool": "x", "class": "command"}]}',
            "sessionGrants.0.class",
        ),
    ],
)
def test_decide_malformed_request(
    run_cli: CliRunner, project: Path, stdin: str, needle: str
) -> None:
    result = run_cli(main, ["decide", "-C", str(project)], stdin=stdin)
    assert result.exit_code == 2 and result.stdout == ""
    assert needle in result.stderr


def test_decide_refuses_other_sources(run_cli: CliRunner, project: Path) -> None:
    result = run_cli(main, ["decide", "-C", str(project), "request.json"], stdin="{}")
    assert result.exit_code == 2 and "stdin" in result.stderr


# --- trust, grants, config -----------------------------------------------------------


def test_trust_verbs(run_cli: CliRunner, workspace: Path, state_dir: Path) -> None:
    ws = ["-C", str(workspace)]
    status = run_cli(main, ["trust", "status", *ws])
    assert status.exit_code == 3 and json.loads(status.stdout)["trusted"] is False
    granted = run_cli(main, ["trust", "grant", *ws])
    assert granted.exit_code == 0 and "trusted" in granted.stderr
    assert json.loads(granted.stdout)["basis"] == "store"
    assert run_cli(main, ["trust", "status", *ws]).exit_code == 0
    revoked = run_cli(main, ["trust", "revoke", *ws])
    assert revoked.exit_code == 0 and json.loads(revoked.stdout)["revoked"] is True
    assert run_cli(main, ["trust", "status", *ws]).exit_code == 3
    assert len((state_dir / "trust.log").read_text().splitlines()) == 2


def test_trust_corrupt_store(run_cli: CliRunner, workspace: Path, state_dir: Path) -> None:
    (state_dir / "trust.json").write_text("{")
    result = run_cli(main, ["trust", "status", "-C", str(workspace)])
    assert result.exit_code == 1 and "corrupt store" in result.stderr and result.stdout == ""


def test_grants_verbs(run_cli: CliRunner, workspace: Path, state_dir: Path) -> None:
    with clock.use(ids=clock.SequentialIds()):
        add_durable_grant(state_dir, workspace, tool="web_search")
    listed = json.loads(run_cli(main, ["grants", "list"]).stdout)["grants"]
    assert [g["id"] for g in listed] == ["g-0001"] and listed[0]["tool"] == "web_search"
    other = run_cli(main, ["grants", "list", "-C", str(workspace.parent)])
    assert json.loads(other.stdout)["grants"] == []
    revoked = run_cli(main, ["grants", "revoke", "g-0001"])
    assert revoked.exit_code == 0 and json.loads(revoked.stdout)["id"] == "g-0001"
    assert "next session" in revoked.stderr
    missing = run_cli(main, ["grants", "revoke", "g-0001"])
    assert missing.exit_code == 1 and "no durable grant" in missing.stderr


def test_config_show(run_cli: CliRunner, workspace: Path, state_dir: Path) -> None:
    (state_dir / "config.json").write_text('{"model": "m1", "secretPatterns": ["*.db"]}')
    out = json.loads(run_cli(main, ["config", "show", "-C", str(workspace)]).stdout)
    assert out["model"] == "m1" and out["secretPatterns"] == ["*.db"]
    assert out["sources"][0]["present"] is True and len(out["sources"][0]["sha256"]) == 64
    (state_dir / "config.json").write_text('{"allowAll": true}')
    bad = run_cli(main, ["config", "show", "-C", str(workspace)])
    assert bad.exit_code == 2 and "'allowAll': unknown field" in bad.stderr


# --- the installed script -------------------------------------------------------------


def test_console_script_pipeline(project: Path, system_path: str) -> None:
    proc = subprocess.run(
        [console_script(), "review-command", "-C", str(project), "--", "wc", "-l", "README.md"],
        capture_output=True,
        text=True,
        env={"PATH": system_path, "AX_STATE_DIR": str(project.parent / "state")},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["verdict"] == "read-only"


def test_help_stays_lean() -> None:
    code = (
        "import sys; from ax_policy.cli import main; main(['--help']); "
        "print(sorted(m for m in ('anthropic', 'httpx', 'rich', 'pydantic') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip().splitlines()[-1] == "[]"
