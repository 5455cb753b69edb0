"""Sequences (| && || ;) and shell wrappers (bash -lc SCRIPT): the grammar, the reasons, and
that bash runs exactly the commands the review saw."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from axtest import CliRunner

from ax_policy import CommandFact, DecisionContext, SandboxStatus, ToolFacts, decide
from ax_policy.breaker import MAX_UNWRAP_DEPTH
from ax_policy.cli import main
from ax_policy.command_review import MAX_SEQUENCE_FOLDERS, review
from ax_policy.compound import MAX_SHELL_NESTING, ShellCall, startup_problem
from ax_policy.shellwords import MAX_PARTS, NotSimple, split_sequence


def verdict(command: str, ws: Path, path: str, **kw: object) -> tuple[str, list[str]]:
    outcome = review(command, ws, path_env=path, **kw)  # type: ignore[arg-type]
    return outcome.verdict, outcome.reasons


# --- the splitter ---------------------------------------------------------------------


def test_split_sequence_keeps_quoted_operators_literal() -> None:
    parts = split_sequence("""grep -c 'a && b' README.md|wc -l ; echo "x|y" || pwd""")
    assert [(p.text, [w.text for w in p.words], p.operator) for p in parts] == [
        ("grep -c 'a && b' README.md", ["grep", "-c", "a && b", "README.md"], "|"),
        ("wc -l", ["wc", "-l"], ";"),
        ('echo "x|y"', ["echo", "x|y"], "||"),
        ("pwd", ["pwd"], None),
    ]


@pytest.mark.parametrize(
    ("command", "needle"),
    [
        ("ls &", "a background job (&)"),
        ("ls & pwd", "a background job (&)"),
        ("ls |& wc", "|&"),
        ("ls ;; pwd", ";;"),
        ("ls &&& pwd", "'&&&'"),
        ("ls; pwd;", "no command follows the last ;"),
        ("&& ls", "no command comes before the first &&"),
        ("ls | | wc", "no command comes between | and |"),
        ("ls 2>&1 | wc", "a redirection (>)"),
        ("ls && wc < README.md", "a redirection (<)"),
        ("ls && (pwd)", "parenthesis"),
        ("ls && { pwd; }", "brace"),
        ("ls && echo $(id)", "$ expansion"),
        ("ls\n&& pwd", "newline"),
        ("ls 'x && pwd", "unterminated quote"),
    ],
)
def test_split_sequence_refuses(command: str, needle: str) -> None:
    with pytest.raises(NotSimple) as refusal:
        split_sequence(command)
    assert needle in refusal.value.reason


def test_split_sequence_caps_the_number_of_commands() -> None:
    assert len(split_sequence(" && ".join(["pwd"] * MAX_PARTS))) == MAX_PARTS
    with pytest.raises(NotSimple, match=f"more than {MAX_PARTS} commands"):
        split_sequence(" && ".join(["pwd"] * (MAX_PARTS + 1)))


# --- sequences ------------------------------------------------------------------------


def test_a_sequence_is_read_only_only_when_every_command_is(
    project: Path, system_path: str
) -> None:
    result = review(
        "ls -la src | sort && cat README.md; pwd || true", project, path_env=system_path
    )
    assert result.verdict == "read-only", result.reasons
    assert result.executable is None and result.argv is None
    assert result.reasons[0].startswith("5 commands joined only by && ; | ||")
    assert result.reasons[1].startswith("command 1 of 5 (ls -la src): ls is on")


def test_reasons_name_each_command_that_failed(project: Path, system_path: str) -> None:
    status, reasons = verdict("ls && rm -rf x | sh; cat /etc/passwd", project, system_path)
    assert status == "ask"
    assert reasons[0] == "command 2 of 4 (rm -rf x): rm is not on the read-only allowlist"
    assert reasons[1].startswith("command 3 of 4 (sh): sh without -c runs a script")
    assert reasons[2].startswith("command 4 of 4 (cat /etc/passwd): path '/etc/passwd'")
    assert len(reasons) == 3


@pytest.mark.parametrize(
    "command",
    [
        "ls && rm -rf ~",
        "ls | rm -rf /",
        "pwd; rm -rf .",
        "bash -lc 'ls; rm -rf ~'",
        "ls && sh -c 'rm -rf /'",
        "bash -c \"sh -c 'rm -rf ~'\"",
    ],
)
def test_the_circuit_breaker_denies_any_part(project: Path, system_path: str, command: str) -> None:
    status, reasons = verdict(command, project, system_path, home=project.parent)
    assert status == "deny", reasons
    assert "circuit breaker" in reasons[0]


def test_a_denied_part_denies_the_whole(project: Path, system_path: str) -> None:
    # The breaker is run on every script the review opens, so a deny found at any
    # level is the verdict of the whole, ahead of the parts that only ask.
    status, reasons = verdict(
        "curl x && bash -c 'rm -rf ~'", project, system_path, home=project.parent
    )
    assert status == "deny" and "circuit breaker" in reasons[0]


# --- cd -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "cd src && cat app.py",
        "cd src; cat app.py",
        "cd src || pwd",
        "cd -P src && ls",
        "cd -L -- src && ls",
        "cd ./src && cat util.py && cd ../docs",
        "cd src && cd . && wc -l app.py",
        "cd docs",
        "sh -c 'cd src && cat app.py'",
    ],
)
def test_cd_into_a_workspace_folder_is_proven(
    command: str, project: Path, system_path: str
) -> None:
    if command.endswith("cd ../docs"):
        # `..` asks even where it would stay inside: bash applies it to the logical name.
        assert verdict(command, project, system_path)[0] == "ask"
        return
    status, reasons = verdict(command, project, system_path)
    assert status == "read-only", reasons


def test_the_commands_after_cd_are_reviewed_where_they_may_run(
    project: Path, system_path: str
) -> None:
    # After `;` or `||` a cd that failed leaves the command in the workspace, where
    # .env is; after `&&` too, since the review proves every folder it may run in.
    (project / "src" / "notes.txt").write_text("n\n")
    for command in ("cd src; cat .env", "cd src && cat ../.env", "cd src || cat .env"):
        status, reasons = verdict(command, project, system_path)
        assert status == "ask" and any("secret" in reason for reason in reasons), reasons
    status, reasons = verdict("cd src && cat notes.txt", project, system_path)
    assert status == "read-only", reasons
    assert "in each folder it may run in (the workspace, src)" in " ".join(reasons)
    # From the workspace, notes.txt names nothing yet (a missing name inside is fine),
    # and a name that leads out from either folder asks.
    (project / "src" / "up").symlink_to("/etc")
    status, reasons = verdict("cd src && cat up/passwd", project, system_path)
    assert status == "ask" and "(cat up/passwd): in src: path 'up/passwd'" in reasons[0], reasons


@pytest.mark.parametrize(
    ("command", "needle"),
    [
        ("cd .. && ls", "climbs with .."),
        ("cd src/.. && cat .env", "climbs with .."),
        ("cd /etc && cat passwd", "outside"),
        ("cd escape && cat passwd", "outside"),
        ("cd .git && cat config", ".git"),
        ("cd - && ls", "previous folder"),
        ("cd -- - && ls", "previous folder"),
        ("cd -e src && ls", "2 operands"),
        ("cd -P -e && ls", "is an option"),
        ("cd && ls", "0 operands"),
        ("cd src docs && ls", "2 operands"),
        ("cd '~' && ls", "home folder"),
        ("cd +1 && ls", "folder stack"),
        ("cd src | ls", "pipeline"),
        ("ls | cd src", "pipeline"),
        ("bash -lc 'cd src && ls'", "startup files"),
        ("bash -c 'cd src && ls'", "startup files"),
        ("zsh -c 'cd src && ls'", "startup files"),
        ("sh -lc 'cd src && ls'", "startup files"),
        ("bash -lc \"sh -c 'cd src && ls'\"", "startup files"),
        ("'cd' src && ls", "quoted"),
    ],
)
def test_cd_asks(command: str, needle: str, project: Path, system_path: str) -> None:
    status, reasons = verdict(command, project, system_path, home=project.parent)
    assert status == "ask", reasons
    assert needle in " ".join(reasons), reasons


def test_a_cd_that_fails_leaves_the_commands_where_they_were(
    project: Path, system_path: str
) -> None:
    # No such folder, or not a folder: cd fails and changes nothing.
    for command in ("cd nowhere && ls", "cd README.md; cat README.md", "cd nowhere/x || ls"):
        status, reasons = verdict(command, project, system_path)
        assert status == "read-only", (command, reasons)
    # A missing name behind a link out of the workspace still leads out.
    assert verdict("cd escape/nowhere && ls", project, system_path)[0] == "ask"


def test_the_folders_a_sequence_may_run_in_are_capped(project: Path, system_path: str) -> None:
    (project / "/".join(["a"] * MAX_SEQUENCE_FOLDERS)).mkdir(parents=True)
    # Each cd after a ; may or may not have happened: one more folder each time.
    fits = "cd a; " * (MAX_SEQUENCE_FOLDERS - 1) + "ls"
    assert verdict(fits, project, system_path)[0] == "read-only"
    too_many = "cd a; " * MAX_SEQUENCE_FOLDERS + "ls"
    status, reasons = verdict(too_many, project, system_path)
    assert status == "ask" and f"more than {MAX_SEQUENCE_FOLDERS} folders" in reasons[0]


# --- shell wrappers -------------------------------------------------------------------


def test_a_wrapper_names_the_shell_and_its_argv(project: Path, system_path: str) -> None:
    result = review("bash -lc 'ls && pwd'", project, path_env=system_path)
    assert result.verdict == "read-only", result.reasons
    assert result.executable is not None and Path(result.executable).name == "bash"
    assert result.argv == ["bash", "-lc", "ls && pwd"]
    assert "2 commands joined only by &&" in result.reasons[0]


@pytest.mark.parametrize(
    ("command", "needle"),
    [
        ("bash -c 'ls' extra-args", "become its $0, $1"),
        ("sh -e -c ls", "sh is given -e; only `sh -c SCRIPT` and `sh -lc SCRIPT`"),
        ("sh -x -c ls", "sh is given -x"),
        ("sh -ec ls", "sh is given -ec"),
        ("bash -ic ls", "bash is given -ic"),
        ("bash --rcfile x -c ls", "bash is given --rcfile"),
        ("bash -c", "no script"),
        ("bash", "without -c"),
        ("bash script.sh", "without -c"),
        ("bash '-c' ls", "bash is given -c"),
        ("'bash' -c ls", "the executable name is quoted"),
        ("env bash -c ls", "env is not on the read-only allowlist"),
        ("/bin/bash -c ls", "named by a path"),
        ("BASH_ENV=x bash -c ls", "NAME=value"),
        ("ksh -c ls", "ksh is not on the read-only allowlist"),
        ("bash -c 'ls > out'", "the script of bash -c: not a plain command or sequence"),
        ("bash -lc 'ls; rm x'", "the script of bash -lc: command 2 of 2 (rm x)"),
    ],
)
def test_only_one_wrapper_shape_is_reviewed(
    project: Path, system_path: str, command: str, needle: str
) -> None:
    status, reasons = verdict(command, project, system_path)
    assert status == "ask", reasons
    assert any(needle in reason for reason in reasons), reasons


def test_shells_nest_only_so_deep(project: Path, system_path: str) -> None:
    assert MAX_UNWRAP_DEPTH >= MAX_SHELL_NESTING, "the breaker must see as deep as the proof"
    two = "bash -c \"sh -c 'ls src'\""
    assert verdict(two, project, system_path)[0] == "read-only"
    three = "bash -c 'sh -c \"dash -c ls\"'"
    status, reasons = verdict(three, project, system_path)
    assert status == "ask" and f"at most {MAX_SHELL_NESTING} deep" in reasons[0]


def test_a_shell_planted_in_the_workspace_is_refused(project: Path, system_path: str) -> None:
    planted = project / "bin" / "bash"
    planted.write_text("#!/bin/sh\n")
    planted.chmod(0o755)
    status, reasons = verdict("bash -c ls", project, f"{project}/bin:{system_path}")
    assert status == "ask" and "inside the workspace" in reasons[0]


def test_login_files_inside_the_workspace_make_a_login_shell_ask(
    project: Path, system_path: str, tmp_path: Path
) -> None:
    # The workspace is the home folder: ax's own write tools could plant ~/.profile.
    status, reasons = verdict("bash -lc ls", project, system_path, home=project)
    assert (
        status == "ask" and "the home folder" in reasons[0] and "inside the workspace" in reasons[0]
    )
    # sh -c reads no startup file, so the home does not matter; bash -c may read ~/.bashrc.
    assert verdict("sh -c ls", project, system_path, home=project)[0] == "read-only"
    assert verdict("dash -c ls", project, system_path, home=project)[0] == "read-only"
    assert verdict("bash -c ls", project, system_path, home=project)[0] == "ask"
    # A dotfiles repository opened as the workspace, its profile linked from the home.
    home = tmp_path / "home"
    home.mkdir()
    (project / "profile").write_text("echo hi\n")
    (home / ".profile").symlink_to(project / "profile")
    status, reasons = verdict("sh -lc ls", project, system_path, home=home)
    assert status == "ask" and ".profile resolves into the workspace" in reasons[0]
    assert verdict("sh -c ls", project, system_path, home=home)[0] == "read-only"
    # A link to a missing file is followed too: writing the file would plant it.
    (home / ".bash_login").symlink_to(project / "not-yet")
    status, reasons = verdict("bash -lc ls", project, system_path, home=home)
    assert status == "ask" and "resolves into the workspace" in reasons[0]


def test_zsh_expands_a_word_starting_with_equals(project: Path, system_path: str) -> None:
    zsh = shutil.which("zsh", path=system_path)
    if zsh is None:
        pytest.skip("zsh is not installed")
    seen = subprocess.run(
        [zsh, "-f", "-c", "echo =ls"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert os.path.isabs(seen) and seen.endswith("/ls")
    home = project.parent
    status, reasons = verdict("zsh -c 'cat =ls'", project, system_path, home=home)
    assert status == "ask" and "EQUALS" in reasons[0], reasons
    # bash and dash keep the word as it is.
    assert verdict("sh -c 'cat =ls'", project, system_path, home=home)[0] == "read-only"
    assert verdict("cat =ls", project, system_path, home=home)[0] == "read-only"


def test_zsh_reads_zshenv_even_without_login(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".zshenv").symlink_to(project / "zshenv")
    call = ShellCall(shell="zsh", login=False, script="ls")
    assert startup_problem(call, project, home) is not None
    assert startup_problem(ShellCall(shell="sh", login=False, script="ls"), project, home) is None
    assert startup_problem(call, project, project) is not None


# --- the argv form and the engine -----------------------------------------------------


def test_the_cli_reviews_the_argv_form(
    run_cli: CliRunner, project: Path, monkeypatch: pytest.MonkeyPatch, system_path: str
) -> None:
    monkeypatch.setenv("PATH", system_path)
    result = run_cli(main, ["review-command", "-C", str(project), "--", "bash", "-lc", "ls && pwd"])
    assert result.exit_code == 0, result.stdout
    assert json.loads(result.stdout)["argv"] == ["bash", "-lc", "ls && pwd"]
    result = run_cli(main, ["review-command", "-C", str(project), "--", "bash", "-lc", "ls; rm x"])
    assert result.exit_code == 1
    assert "command 2 of 2 (rm x)" in json.loads(result.stdout)["reasons"][0]
    # As argv words, && is a file name given to ls, not an operator.
    result = run_cli(main, ["review-command", "-C", str(project), "--", "ls", "&&", "pwd"])
    assert json.loads(result.stdout)["argv"] == ["ls", "&&", "pwd"]


def test_the_engine_allows_a_proven_sequence_only_in_the_sandbox(
    project: Path, system_path: str, tmp_path: Path
) -> None:
    run = ToolFacts("run_command", command=lambda i: CommandFact(command=i["command"]))
    sandbox = SandboxStatus(
        backend="landlock", enforced=True, profiles=["read-only"], network_denied=True
    )
    ctx = DecisionContext(workspace=project, sandbox=sandbox, path_env=system_path, home=tmp_path)
    allowed = decide(run, {"command": "grep -rn TODO src | wc -l"}, ctx)
    assert (allowed.verdict, allowed.rule) == ("allow", "command-read-only-sandboxed")
    asked = decide(run, {"command": "grep -rn TODO src | sh"}, ctx)
    assert asked.verdict == "ask" and "command 2 of 2 (sh)" in asked.reason
    bare = DecisionContext(workspace=project, path_env=system_path, home=tmp_path)
    assert decide(run, {"command": "ls && pwd"}, bare).rule == "command-read-only-unsandboxed"


# --- bash runs what was reviewed ------------------------------------------------------

RUN_AS_REVIEWED = [
    "ls -la src | sort -r && cat README.md; pwd",
    "grep -c 'a && b' README.md|wc -l ; echo \"x|y\" 'p; q' || pwd",
    'echo "/usr"\'/\'"local"/bin && echo \'\' "" x',
    "true || echo never; false || echo then && echo last",
    "echo a | grep a | wc -c; echo 'tab: ok'",
    "bash -c 'echo inner && echo \"two words\"' && echo outer",
    # Single quotes keep $, backticks, backslashes and ! as they are; double quotes keep a
    # backslash before a character it does not escape.
    "grep -c 'x$' README.md && echo '`id` $(id) \\n !x' \"a\\nb\\.c\\ d\"",
    "bash -c 'echo \"p\\tq\" '\"'\"'$x'\"'\"'' && echo '\"$\"'",
]

STUBBED = ("cat", "echo", "false", "grep", "ls", "pwd", "sort", "true", "wc")

_STUB = """#!{python}
import json, os, sys
with open(os.environ["AX_STUB_LOG"], "a") as log:
    log.write(json.dumps([os.path.basename(sys.argv[0]), *sys.argv[1:]]) + "\\n")
sys.exit(1 if os.path.basename(sys.argv[0]) == "false" else 0)
"""


def expected_runs(command: str) -> list[list[str]]:
    """The argvs bash must run, from the review's own parse: every stub exits 0 but
    false, so `a || b` runs b only after false; a bash -c runs its script's."""
    runs: list[list[str]] = []
    status, operator = 0, None
    pipeline: list[list[str]] = []
    for part in split_sequence(command):
        pipeline.append([word.text for word in part.words])
        if part.operator == "|":
            continue
        if operator in (None, ";") or (operator == "&&") == (status == 0):
            for argv in pipeline:
                runs += expected_runs(argv[2]) if argv[0] == "bash" else [argv]
            status = 1 if pipeline[-1][0] == "false" else 0
        pipeline, operator = [], part.operator
    return runs


@pytest.mark.parametrize("command", RUN_AS_REVIEWED)
def test_bash_runs_exactly_the_reviewed_commands(
    command: str, project: Path, system_path: str, tmp_path: Path
) -> None:
    bash = shutil.which("bash", path=system_path)
    if bash is None:
        pytest.skip("bash is not installed")
    assert review(command, project, path_env=system_path).verdict == "read-only"
    want = expected_runs(command)
    assert {argv[0] for argv in want} <= set(STUBBED)
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for name in STUBBED:
        stub = stubs / name
        stub.write_text(_STUB.format(python=sys.executable))
        stub.chmod(0o755)
    log = tmp_path / "runs.jsonl"
    # As ax-exec runs a run_command string (bash --noprofile --norc -c), with the
    # builtins that would shadow the stubs turned off, in the inner bash too.
    disable = "enable -n echo true false pwd; "
    script = disable + command.replace("bash -c '", "bash -c '" + disable)
    subprocess.run(
        [bash, "--noprofile", "--norc", "-c", script],
        env={"PATH": f"{stubs}:{os.path.dirname(bash)}", "AX_STUB_LOG": str(log)},
        cwd=project,
        check=False,
        capture_output=True,
        timeout=30,
    )
    ran = [json.loads(line) for line in log.read_text().splitlines()]
    # The commands of a pipeline run at once, so compare without their order.
    assert sorted(map(tuple, ran)) == sorted(map(tuple, want))
