"""run_managed with real processes: termination, tree kill, drain and capture."""

from __future__ import annotations

import hashlib
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import pytest
from pydantic import ValidationError

from ax_exec import ExecOutcome, ExecSpec, run_managed
from ax_exec.capture import DEFAULT_MAX_OUTPUT_BYTES
from ax_exec.proctree import KILL_GRACE_S
from ax_exec.run import DRAIN_TIMEOUT_S

from .helpers import pid_alive, read_pid

PY = sys.executable


def test_cat_returns_at_once_because_stdin_is_dev_null() -> None:
    started = time.monotonic()
    outcome = run_managed(ExecSpec(argv=["cat"], timeout_s=30))
    assert time.monotonic() - started < 2
    assert outcome.termination == "exited"
    assert outcome.exit_code == 0
    assert outcome.stdout.bytes == 0
    assert outcome.kill.attempted is False


def test_exit_code_is_kept(tmp_path: Path) -> None:
    assert run_managed(ExecSpec(shell="exit 7")).exit_code == 7
    outcome = run_managed(ExecSpec(argv=["false"]))
    assert (outcome.termination, outcome.exit_code, outcome.passed) == ("exited", 1, False)
    assert run_managed(ExecSpec(argv=["true"])).passed


def test_shell_string_runs_in_cwd(tmp_path: Path) -> None:
    (tmp_path / "marker.txt").write_text("x")
    outcome = run_managed(ExecSpec(shell="ls | grep marker; echo err >&2", cwd=str(tmp_path)))
    assert outcome.stdout.head == "marker.txt\n"
    assert outcome.stderr.head == "err\n"
    assert outcome.cwd == str(tmp_path.resolve())
    assert outcome.argv[-1] == "ls | grep marker; echo err >&2"


def test_missing_binary_is_a_spawn_error() -> None:
    outcome = run_managed(ExecSpec(argv=["ax-no-such-binary-xyz", "--flag"]))
    assert outcome.termination == "spawn-error"
    assert outcome.exit_code is None
    assert outcome.error is not None and "ax-no-such-binary-xyz" in outcome.error


def test_missing_cwd_is_a_spawn_error(tmp_path: Path) -> None:
    outcome = run_managed(ExecSpec(argv=["true"], cwd=str(tmp_path / "gone")))
    assert outcome.termination == "spawn-error"
    assert outcome.error is not None and "gone" in outcome.error


def test_setsid_double_fork_under_timeout_leaves_no_survivor(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    # Fork, setsid, fork again and let the middle process exit: the classic
    # daemon escape. The grandchild sleeps and holds no pipe of ours.
    script = f"""
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        open({str(pid_file)!r}, "w").write(str(os.getpid()))
        time.sleep(300)
    os._exit(0)
time.sleep(300)
"""
    started = time.monotonic()
    outcome = run_managed(ExecSpec(argv=[PY, "-c", script], timeout_s=1.5))
    grandchild = read_pid(pid_file)
    assert outcome.termination == "timeout"
    assert outcome.exit_code is None
    assert outcome.signal in ("SIGTERM", "SIGKILL")
    assert outcome.kill.attempted and outcome.kill.verified
    assert outcome.kill.leftovers >= 2
    assert not pid_alive(grandchild)
    assert time.monotonic() - started < 1.5 + KILL_GRACE_S + DRAIN_TIMEOUT_S + 2


def test_background_child_is_killed_after_a_normal_exit(tmp_path: Path) -> None:
    pid_file = tmp_path / "sleep.pid"
    started = time.monotonic()
    outcome = run_managed(ExecSpec(shell=f"sleep 300 & echo $! > {pid_file}; echo hi"))
    assert time.monotonic() - started < 5
    assert outcome.termination == "exited" and outcome.exit_code == 0
    assert outcome.stdout.head == "hi\n"
    assert outcome.kill.attempted and outcome.kill.verified
    assert outcome.kill.leftovers == 1
    assert not pid_alive(read_pid(pid_file))


def test_detached_grandchild_holding_the_pipes_cannot_hang_the_call(tmp_path: Path) -> None:
    pid_file = tmp_path / "held.pid"
    # Environment cleared (no run marker), new session, still holding stdout:
    # found through the pipe it holds.
    shell = f"env -i setsid sh -c 'echo $$ > {pid_file}; exec sleep 300' & sleep 0.3; echo hi"
    started = time.monotonic()
    outcome = run_managed(ExecSpec(shell=shell))
    assert time.monotonic() - started < 5
    assert outcome.stdout.head == "hi\n"
    assert outcome.kill.verified
    assert not outcome.drain_timed_out
    assert not pid_alive(read_pid(pid_file))


def test_abort_event_kills_the_tree(tmp_path: Path) -> None:
    pid_file = tmp_path / "sleep.pid"
    abort = threading.Event()
    threading.Timer(0.4, abort.set).start()
    started = time.monotonic()
    outcome = run_managed(
        ExecSpec(shell=f"sleep 300 & echo $! > {pid_file}; wait", timeout_s=60), abort=abort
    )
    assert time.monotonic() - started < 10
    assert outcome.termination == "aborted"
    assert outcome.exit_code is None
    assert outcome.kill.verified
    assert not pid_alive(read_pid(pid_file))


def test_abort_callable_is_polled() -> None:
    deadline = time.monotonic() + 0.3
    outcome = run_managed(
        ExecSpec(argv=["sleep", "300"]), abort=lambda: time.monotonic() > deadline
    )
    assert outcome.termination == "aborted"


def test_term_ignoring_child_is_killed_after_the_grace() -> None:
    script = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ready', flush=True); time.sleep(300)"
    )
    outcome = run_managed(ExecSpec(argv=[PY, "-c", script], timeout_s=1))
    assert outcome.termination == "timeout"
    assert outcome.signal == "SIGKILL"
    assert outcome.kill.verified


def test_child_killed_by_a_signal_has_no_exit_code() -> None:
    outcome = run_managed(ExecSpec(shell="kill -SEGV $$"))
    assert outcome.termination == "exited"
    assert outcome.exit_code is None
    assert outcome.signal == "SIGSEGV"
    assert not outcome.passed


def test_an_outcome_cannot_carry_an_exit_code_unless_exited() -> None:
    good = run_managed(ExecSpec(argv=["true"])).to_json()
    with pytest.raises(ValidationError, match="only an exited command"):
        ExecOutcome.model_validate({**good, "termination": "timeout", "exitCode": 0})


def test_spec_needs_exactly_one_command() -> None:
    with pytest.raises(ValidationError, match="exactly one"):
        ExecSpec(argv=["ls"], shell="ls")
    with pytest.raises(ValidationError, match="exactly one"):
        ExecSpec()
    with pytest.raises(ValidationError):
        ExecSpec(argv=[])


def test_a_50_mb_flood_keeps_memory_bounded() -> None:
    total = 50_000_000
    script = (
        "import sys\n"
        "chunk = b'x' * 65536\n"
        f"left = {total}\n"
        "while left:\n"
        "    n = min(left, len(chunk))\n"
        "    sys.stdout.buffer.write(chunk[:n])\n"
        "    left -= n\n"
    )
    tracemalloc.start()
    try:
        outcome = run_managed(ExecSpec(argv=[PY, "-c", script], timeout_s=60))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert outcome.exit_code == 0
    assert outcome.stdout.bytes == total
    assert outcome.stdout.truncated
    kept = len(outcome.stdout.head) + len(outcome.stdout.tail)
    assert kept == DEFAULT_MAX_OUTPUT_BYTES
    # Everything Python allocated during the run, the captures included.
    assert peak < 4 * 1024 * 1024, peak


def test_the_end_of_stderr_is_always_kept() -> None:
    script = "import sys; sys.stderr.write('e' * 1_000_000 + 'THE-END'); print('out')"
    outcome = run_managed(ExecSpec(argv=[PY, "-c", script], max_output_bytes=4096))
    assert outcome.stderr.truncated
    assert outcome.stderr.tail.endswith("THE-END")
    assert outcome.stderr.bytes == 1_000_007
    assert len(outcome.stderr.head) + len(outcome.stderr.tail) == 4096
    assert outcome.stdout.head == "out\n" and not outcome.stdout.truncated


def test_truncated_output_is_spilled_under_its_hash(tmp_path: Path) -> None:
    spill = tmp_path / "objects"
    script = (
        "import sys; sys.stdout.write('a' * 300000); sys.stdout.flush(); sys.stderr.write('b' * 10)"
    )
    outcome = run_managed(
        ExecSpec(argv=[PY, "-c", script], max_output_bytes=2048, spill_dir=str(spill))
    )
    assert outcome.spill_path is not None
    data = Path(outcome.spill_path).read_bytes()
    assert Path(outcome.spill_path).name == hashlib.sha256(data).hexdigest()
    assert sorted(data.decode()) == sorted("a" * 300000 + "b" * 10)
    assert outcome.spill_complete is True
    assert [p.name for p in spill.iterdir()] == [Path(outcome.spill_path).name]


def test_untruncated_output_leaves_no_spill(tmp_path: Path) -> None:
    spill = tmp_path / "objects"
    outcome = run_managed(ExecSpec(argv=["echo", "small"], spill_dir=str(spill)))
    assert outcome.spill_path is None
    assert list(spill.iterdir()) == []


def test_the_shell_runs_no_code_and_no_options_from_the_environment(tmp_path: Path) -> None:
    """What a proven string needs: bash --noprofile --norc -c runs only the string, with
    default options, its builtin cd and the ls on PATH, whatever the parent exported."""
    marker = tmp_path / "bash_env_ran"
    startup = tmp_path / "startup.sh"
    startup.write_text(f"touch {marker}\n")
    (tmp_path / "work" / "sub").mkdir(parents=True)
    (tmp_path / "elsewhere" / "sub").mkdir(parents=True)
    (tmp_path / "work" / ".hidden").write_text("")
    (tmp_path / "work" / "Shown").write_text("")
    environ = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "BASH_ENV": str(startup),
        "ENV": str(startup),
        "BASH_FUNC_ls%%": "() { echo planted-ls; }",
        "BASH_FUNC_cd%%": "() { echo planted-cd; }",
        "SHELLOPTS": "xtrace",
        "BASHOPTS": "dotglob:nocaseglob",
        "PS4": "$(touch ps4_ran)",
        "GLOBIGNORE": "Shown",
        "CDPATH": str(tmp_path / "elsewhere"),
        "PROMPT_COMMAND": "echo prompt",
        "ZDOTDIR": str(tmp_path),
    }
    outcome = run_managed(
        ExecSpec(shell="cd sub && pwd && cd .. && ls && echo s*; env", cwd=str(tmp_path / "work")),
        environ=environ,
    )
    lines = outcome.stdout.head.splitlines()
    assert lines[:3] == [str(tmp_path / "work" / "sub"), "Shown", "sub"], outcome.stderr.head
    assert not marker.exists() and not (tmp_path / "work" / "sub" / "ps4_ran").exists()
    assert "planted" not in outcome.stdout.head and "+ " not in outcome.stderr.head
    names = {line.split("=", 1)[0] for line in lines[3:]}
    assert not names & set(environ) - {"PATH", "HOME"}
    assert sorted(set(environ) - {"PATH", "HOME"}) == outcome.env_removed


def test_secrets_are_absent_from_the_child_environment() -> None:
    environ = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/home/someone",
        "LANG": "C.UTF-8",
        "HTTPS_PROXY": "http://proxy.local:3128",
        "no_proxy": "localhost",
        "PLAIN": "visible",
        "OPENAI_API_KEY": "sk-value-one",
        "github_token": "value-two",
        "DB_Password": "value-three",
        "AWS_SECRET_ACCESS_KEY": "value-four",
        "GOOGLE_APPLICATION_CREDENTIALS": "value-five",
        "CORP_VAULT": "value-six",
    }
    outcome = run_managed(
        ExecSpec(argv=["env"], env_deny_patterns=["*vault*"], env={"ADDED": "yes"}),
        environ=environ,
    )
    seen = dict(line.split("=", 1) for line in outcome.stdout.head.splitlines())
    for value in (
        "sk-value-one",
        "value-two",
        "value-three",
        "value-four",
        "value-five",
        "value-six",
    ):
        assert value not in outcome.stdout.head
    assert seen["PLAIN"] == "visible"
    assert seen["HTTPS_PROXY"] == "http://proxy.local:3128"
    assert seen["no_proxy"] == "localhost"
    assert seen["PATH"] == "/usr/bin:/bin" and seen["HOME"] == "/home/someone"
    assert seen["ADDED"] == "yes"
    assert outcome.env_removed == sorted(
        [
            "OPENAI_API_KEY",
            "github_token",
            "DB_Password",
            "AWS_SECRET_ACCESS_KEY",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "CORP_VAULT",
        ]
    )


def test_live_hook_sees_output_as_it_comes() -> None:
    seen: list[tuple[str, bytes]] = []
    outcome = run_managed(
        ExecSpec(shell="echo one; echo two >&2"),
        on_output=lambda name, chunk: seen.append((name, chunk)),
    )
    assert outcome.exit_code == 0
    assert b"".join(c for n, c in seen if n == "stdout") == b"one\n"
    assert b"".join(c for n, c in seen if n == "stderr") == b"two\n"


def test_outcome_json_has_the_documented_shape() -> None:
    data = run_managed(ExecSpec(argv=["true"])).to_json()
    for key in (
        "termination",
        "exitCode",
        "signal",
        "durationMs",
        "stdout",
        "stderr",
        "kill",
        "sandbox",
        "spillPath",
    ):
        assert key in data
    assert set(data["stdout"]) == {"head", "tail", "bytes", "truncated"}
    assert {"attempted", "verified", "leftovers"} <= set(data["kill"])
    assert {"backend", "profile", "enforced", "confines", "doesNotConfine"} <= set(data["sandbox"])
    assert data["sandbox"]["backend"] == "none" and data["sandbox"]["enforced"] is False


def test_an_exception_in_the_output_hook_still_kills_the_tree(tmp_path: Path) -> None:
    pid_file = tmp_path / "sleep.pid"

    def explode(name: str, chunk: bytes) -> None:
        raise RuntimeError("hook failed")

    with pytest.raises(RuntimeError, match="hook failed"):
        run_managed(
            ExecSpec(shell=f"sleep 300 & echo $! > {pid_file}; echo go; wait"), on_output=explode
        )
    assert not pid_alive(read_pid(pid_file))


def test_concurrent_runs_only_kill_their_own_processes(tmp_path: Path) -> None:
    # Short runs that leave a background process, next to a long run that must
    # not be touched by their cleanups.
    results: dict[str, ExecOutcome] = {}

    def run(name: str, spec: ExecSpec) -> None:
        results[name] = run_managed(spec)

    threads = [
        threading.Thread(target=run, args=("long", ExecSpec(shell="sleep 1.5; echo survived")))
    ]
    threads += [
        threading.Thread(
            target=run, args=(f"short{i}", ExecSpec(shell=f"sleep 300 & sleep 0.{i + 1}; echo {i}"))
        )
        for i in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert results["long"].exit_code == 0
    assert results["long"].stdout.head == "survived\n"
    assert results["long"].kill.attempted is False
    for i in range(4):
        outcome = results[f"short{i}"]
        assert outcome.exit_code == 0 and outcome.stdout.head == f"{i}\n"
        assert outcome.kill.leftovers == 1 and outcome.kill.verified
