"""libcommon.git: the one hardened git runner (a repository's config never runs a program)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from libcommon import git as git_module
from libcommon.git import MAX_BATCH_COMMANDS, git_said, run_git, run_git_batch


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed on this machine")
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for index in range(50):
        (root / f"file-{index:02}.txt").write_text("x\n")
    return root


def test_a_planted_fsmonitor_never_runs(repo: Path, tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    with (repo / ".git" / "config").open("a") as config:
        config.write(f'[core]\n\tfsmonitor = "touch {canary}; false"\n')
    # Plain git runs it: the plant is live, so its absence below is the runner's doing.
    subprocess.run(["git", "status"], cwd=repo, capture_output=True, check=False)
    assert canary.exists()
    canary.unlink()
    done = run_git(repo, ["status", "--porcelain"], os.environ)
    assert done is not None and done.ok
    assert not canary.exists()


def test_git_variables_pointing_elsewhere_are_dropped(repo: Path) -> None:
    environ = {**os.environ, "GIT_DIR": "/nonexistent", "GIT_WORK_TREE": "/"}
    done = run_git(repo, ["ls-files", "-z", "--others"], environ)
    assert done is not None and done.ok
    assert done.stdout.count(b"\0") == 50


def test_output_is_read_up_to_the_cap(repo: Path) -> None:
    done = run_git(repo, ["ls-files", "-z", "--others"], os.environ, max_output_bytes=100)
    assert done is not None
    assert (done.truncated, len(done.stdout), done.ok) == (True, 100, False)


def test_a_failure_keeps_what_git_said_and_a_success_says_nothing(repo: Path) -> None:
    commands = [["rev-parse", "--verify", "--end-of-options", "no-such-ref"], ["ls-files"]]
    failed, listed = run_git_batch(repo, commands, os.environ)
    assert failed is not None and not failed.ok
    assert failed.said() == "fatal: Needed a single revision"
    assert git_said(failed) == ": fatal: Needed a single revision"
    assert listed is not None and listed.ok and listed.said() == "" and git_said(listed) == ""
    assert git_said(None) == ""
    # The reason, not the usage hint printed after it.
    ambiguous = run_git(repo, ["show", "no-such-ref"], os.environ)
    assert ambiguous is not None and ambiguous.stderr.count(b"\n") > 1
    assert ambiguous.said().startswith("fatal: ambiguous argument 'no-such-ref'")


def test_only_the_end_of_stderr_is_kept_and_one_line_quoted(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(git_module, "GIT_STDERR_MAX_BYTES", 64)
    monkeypatch.setattr(git_module, "GIT_SAID_MAX_CHARS", 40)
    done = run_git(repo, ["show", "r" * 500], os.environ)
    assert done is not None and not done.ok
    assert len(done.stderr) == 64 and done.stderr.endswith(b"\n")
    assert len(done.said()) == 40


def test_a_process_git_leaves_holding_stderr_is_not_waited_for(repo: Path) -> None:
    # An alias's shell starts a sleep that keeps the run's stderr, and prints its pid.
    alias = "alias.linger=!sleep 60 >/dev/null & echo $!"
    began = time.monotonic()
    done = run_git(repo, ["-c", alias, "linger"], os.environ, timeout_s=30)
    elapsed = time.monotonic() - began
    assert done is not None and done.ok
    os.kill(int(done.text()), signal.SIGKILL)
    # Waiting for that stderr to end would have taken the whole 30 s timeout.
    assert elapsed < 15


def test_no_git_and_a_hung_git_are_none(repo: Path, tmp_path: Path) -> None:
    assert run_git(repo, ["status"], {**os.environ, "PATH": str(tmp_path / "empty")}) is None
    # A stand-in named git that never answers: the runner gives up at its timeout.
    stand_in = tmp_path / "bin" / "git"
    stand_in.parent.mkdir()
    stand_in.write_text(f"#!/bin/sh\nexec {shutil.which('sleep')} 30\n")
    stand_in.chmod(0o755)
    started = time.monotonic()
    environ = {**os.environ, "PATH": str(stand_in.parent)}
    assert run_git(repo, ["status"], environ, timeout_s=0.5) is None
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("program", ["clean", "process", "smudge"])
def test_a_planted_filter_driver_never_runs(repo: Path, tmp_path: Path, program: str) -> None:
    canary = tmp_path / "canary"
    (repo / ".gitattributes").write_text("* filter=evil.v2\n")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    with (repo / ".git" / "config").open("a") as config:
        config.write(f'[filter "evil.v2"]\n\t{program} = "touch {canary}; cat"\n')
    (repo / "file-00.txt").write_text("changed\n")
    # status hashes the changed file through the filter, and checkout smudges it: plain
    # git runs the plant, so its absence below is the runner's doing.
    plain = ["checkout", "--", "file-00.txt"] if program == "smudge" else ["status"]
    subprocess.run(["git", *plain], cwd=repo, capture_output=True, check=False)
    assert canary.exists()
    canary.unlink()
    (repo / "file-00.txt").write_text("changed again\n")
    for args in (["status", "--porcelain"], ["diff", "--stat"], ["checkout", "--", "file-01.txt"]):
        run_git(repo, args, os.environ)
    assert not canary.exists()


def test_a_planted_textconv_never_runs(repo: Path, tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    (repo / ".gitattributes").write_text("*.txt diff=evil\n")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    with (repo / ".git" / "config").open("a") as config:
        config.write(f'[diff "evil"]\n\ttextconv = "touch {canary}; cat"\n')
    (repo / "file-00.txt").write_text("changed\n")
    subprocess.run(["git", "diff"], cwd=repo, capture_output=True, check=False)
    assert canary.exists()
    canary.unlink()
    done = run_git(repo, ["diff"], os.environ)
    assert done is not None and done.ok and b"changed" in done.stdout
    assert not canary.exists()


def test_a_config_git_cannot_read_is_no_answer(repo: Path) -> None:
    with (repo / ".git" / "config").open("a") as config:
        config.write("[broken\n")
    assert run_git(repo, ["status", "--porcelain"], os.environ) is None


def test_a_planted_external_diff_never_runs_and_a_plain_diff_works(
    repo: Path, tmp_path: Path
) -> None:
    canary = tmp_path / "canary"
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    (repo / "file-00.txt").write_text("changed\n")
    plain = run_git(repo, ["diff"], os.environ)
    assert plain is not None and plain.ok and b"+changed" in plain.stdout
    with (repo / ".git" / "config").open("a") as config:
        config.write(f'[diff]\n\texternal = "touch {canary}; true"\n')
    subprocess.run(["git", "diff"], cwd=repo, capture_output=True, check=False)
    assert canary.exists()
    canary.unlink()
    done = run_git(repo, ["diff"], os.environ)
    assert done is not None and not done.ok
    assert not canary.exists()


def _logging_git(tmp_path: Path, started_before_any_runs: int = 0) -> tuple[Path, Path]:
    """A stand-in git that logs each argv and runs the real git; with
    ``started_before_any_runs``, each command (not the driver probe) first waits until
    that many commands have started, so it fails (exit 9) unless they run at once."""
    real = shutil.which("git")
    assert real is not None
    log = tmp_path / "git.log"
    started = tmp_path / "started"
    started.mkdir()
    stand_in = tmp_path / "bin" / "git"
    stand_in.parent.mkdir()
    stand_in.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {log}\n'
        'case "$*" in *--get-regexp*|version) exec ' + real + ' "$@";; esac\n'
        f"touch {started}/$$\n"
        "tries=0\n"
        f"while [ $(ls {started} | wc -l) -lt {started_before_any_runs} ]; do\n"
        "  tries=$((tries + 1)); [ $tries -gt 100 ] && exit 9; sleep 0.05\n"
        "done\n"
        f'exec {real} "$@"\n'
    )
    stand_in.chmod(0o755)
    return stand_in.parent, log


def test_a_batch_answers_each_command_as_run_git_does(repo: Path) -> None:
    commands = [
        ["rev-parse", "--show-prefix"],
        ["ls-files", "-z", "--others"],
        ["no-such-verb"],
        ["status", "--porcelain", "-z"],
    ]
    batch = run_git_batch(repo, commands, os.environ)
    one_by_one = [run_git(repo, args, os.environ) for args in commands]
    assert [done.returncode if done else None for done in batch] == [0, 0, 1, 0]
    assert batch == one_by_one
    assert batch[1] is not None and batch[1].stdout.count(b"\0") == 50


def test_a_batch_probes_the_drivers_once_and_runs_its_commands_at_once(
    repo: Path, tmp_path: Path
) -> None:
    folder, log = _logging_git(tmp_path, started_before_any_runs=3)
    environ = {**os.environ, "PATH": f"{folder}:{os.environ['PATH']}"}
    commands = [["ls-files", "-z"], ["ls-files", "-z", "--others"], ["status", "--porcelain"]]
    batch = run_git_batch(repo, commands, environ, timeout_s=30)
    assert [done is not None and done.ok for done in batch] == [True, True, True]
    lines = [line for line in log.read_text().splitlines() if line != "version"]
    assert sum("--get-regexp" in line for line in lines) == 1
    assert len(lines) == 4
    # Every command carries the hardening the probe computed.
    assert all("core.fsmonitor=false" in line for line in lines)


def test_a_planted_filter_driver_never_runs_in_a_batch(repo: Path, tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    (repo / ".gitattributes").write_text("* filter=evil\n")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    with (repo / ".git" / "config").open("a") as config:
        config.write(f'[filter "evil"]\n\tclean = "touch {canary}; cat"\n')
    (repo / "file-00.txt").write_text("changed\n")
    subprocess.run(["git", "status"], cwd=repo, capture_output=True, check=False)
    assert canary.exists()
    canary.unlink()
    (repo / "file-00.txt").write_text("changed again\n")
    batch = run_git_batch(
        repo, [["status", "--porcelain"], ["diff", "--stat"], ["ls-files", "-z"]], os.environ
    )
    assert all(done is not None for done in batch)
    assert not canary.exists()


def test_a_batch_caps_each_output_on_its_own(repo: Path) -> None:
    short, long = run_git_batch(
        repo,
        [["rev-parse", "--show-prefix"], ["ls-files", "-z", "--others"]],
        os.environ,
        max_output_bytes=100,
    )
    assert short is not None and short.ok
    assert long is not None and (long.truncated, len(long.stdout)) == (True, 100)


def test_a_batch_without_git_or_past_its_deadline_answers_none(repo: Path, tmp_path: Path) -> None:
    commands = [["status"], ["ls-files"]]
    no_git = {**os.environ, "PATH": str(tmp_path / "empty")}
    assert run_git_batch(repo, commands, no_git) == [None, None]
    stand_in = tmp_path / "bin" / "git"
    stand_in.parent.mkdir()
    stand_in.write_text(f"#!/bin/sh\nexec {shutil.which('sleep')} 30\n")
    stand_in.chmod(0o755)
    hung = {**os.environ, "PATH": str(stand_in.parent)}
    assert run_git_batch(repo, commands, hung, timeout_s=0.5) == [None, None]


def test_a_config_git_cannot_read_is_no_answer_for_the_whole_batch(repo: Path) -> None:
    with (repo / ".git" / "config").open("a") as config:
        config.write("[broken\n")
    assert run_git_batch(repo, [["status"], ["ls-files"]], os.environ) == [None, None]


def test_a_batch_is_bounded(repo: Path) -> None:
    with pytest.raises(ValueError, match="at most"):
        run_git_batch(repo, [["status"]] * (MAX_BATCH_COMMANDS + 1), os.environ)


def test_a_required_filter_is_made_optional_once_its_programs_are_emptied(
    repo: Path, tmp_path: Path
) -> None:
    canary = tmp_path / "canary"
    (repo / ".gitattributes").write_text("*.txt filter=lfs\n")
    with (repo / ".git" / "config").open("a") as config:
        config.write(f'[filter "lfs"]\n\tclean = "touch {canary}; cat"\n\trequired = true\n')
    # git-lfs marks its filter required: emptied but still required, every add would fail.
    done = run_git(repo, ["add", "-A"], os.environ)
    assert done is not None and done.ok
    listed = run_git(repo, ["ls-files", "-z"], os.environ)
    assert listed is not None and listed.stdout.count(b"\0") == 51
    assert not canary.exists()
