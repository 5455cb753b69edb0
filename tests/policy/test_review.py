"""review_command case by case: executables, PATH, flags, paths and the circuit breaker."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ax_policy import review_command
from ax_policy.breaker import split_commands, wipe_reason
from ax_policy.command_review import MAX_FOLDER_WALK_ENTRIES
from ax_policy.models import WorkspaceConfig
from ax_policy.shellwords import NotSimple, split_words


def review(command: str, ws: Path, path: str, **kw: object):  # type: ignore[no-untyped-def]
    return review_command(command, ws, path_env=path, **kw)  # type: ignore[arg-type]


def test_read_only_names_the_executable_and_argv(project: Path, system_path: str) -> None:
    result = review("grep -rn 'def main' src", project, system_path)
    assert result.verdict == "read-only"
    assert result.argv == ["grep", "-rn", "def main", "src"]
    assert result.executable is not None
    assert os.path.realpath(result.executable) == result.executable
    assert Path(result.executable).name == "grep"


def test_workspace_planted_executable_on_path(project: Path, system_path: str) -> None:
    # bin/ls is planted in the workspace and put first on PATH.
    result = review("ls -la", project, f"{project}/bin:{system_path}")
    assert result.verdict == "ask"
    assert "inside the workspace" in result.reasons[0]


def test_relative_path_entry_is_searched_from_the_workspace(
    project: Path, system_path: str
) -> None:
    assert review("ls -la", project, f"bin:{system_path}").verdict == "ask"
    # An empty entry means the current folder: plant an executable at the top.
    planted = project / "cat"
    planted.write_text("#!/bin/sh\n")
    planted.chmod(0o755)
    assert review("cat README.md", project, f":{system_path}").verdict == "ask"


def test_symlink_in_path_into_the_workspace(
    tmp_path: Path, project: Path, system_path: str
) -> None:
    outside_bin = tmp_path / "tools"
    outside_bin.mkdir()
    (outside_bin / "cat").symlink_to(project / "bin" / "ls")
    result = review("cat README.md", project, f"{outside_bin}:{system_path}")
    assert result.verdict == "ask" and "inside the workspace" in result.reasons[0]


def test_executable_outside_system_dirs(tmp_path: Path, project: Path, system_path: str) -> None:
    other = tmp_path / "opt"
    other.mkdir()
    fake = other / "head"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    result = review("head README.md", project, f"{other}:{system_path}")
    assert result.verdict == "ask" and "not under a system directory" in result.reasons[0]


def test_missing_executable(project: Path) -> None:
    result = review("cat README.md", project, "/nonexistent")
    assert result.verdict == "ask" and result.reasons == ["cat was not found on PATH"]


def test_not_allowlisted(project: Path, system_path: str) -> None:
    result = review("python3 -V", project, system_path)
    assert result.verdict == "ask" and "not on the read-only allowlist" in result.reasons[0]
    assert review("git status", project, system_path).verdict == "ask"


@pytest.mark.parametrize(
    ("command", "needle"),
    [
        ("ls -Z src", "ls flag -Z"),
        ("ls --sort=random", "--sort accepts only"),
        ("head -n ten README.md", "needs a number"),
        ("head -n", "needs a value"),
        ("grep --color=rainbow x src", "accepts always, never or auto"),
        ("sort --comp=sh README.md", "--comp="),
        ("wc --files0-from=list", "--files0-from="),
        ("pwd src", "without operands"),
        ("uniq names.txt out.txt", "at most 1 operand"),
        ("date 0101", "+FORMAT"),
        ("find . -exec id ;", None),
        ("find . -name", "needs a value"),
        ("find . -exec rm '{}' +", "-exec is not on its allowlist"),
        ("sed -n 1,20p", None),
        ("sed 1,20p README.md", "sed -n [-e] <line>"),
        ("sed -n /x/p README.md", "sed -n [-e] <line>"),
        ("cat README.md /etc/hostname", "outside the workspace"),
        ("cat escape/passwd", "through a symlink"),
        ("grep -f /etc/passwd x src", "outside the workspace"),
        ("realpath --relative-to=/etc src", "outside the workspace"),
        ("cat .env", "secret-named"),
        ("head ''", "empty"),
    ],
)
def test_argument_checks(project: Path, system_path: str, command: str, needle: str | None) -> None:
    result = review(command, project, system_path)
    if needle is None:
        # sed with no file reads stdin and is fine; find -exec ... ; has an unquoted ;.
        expected = "read-only" if command.startswith("sed") else "ask"
        assert result.verdict == expected, result.reasons
        return
    assert result.verdict == "ask", command
    assert any(needle in reason for reason in result.reasons), result.reasons


def test_pattern_operand_is_not_a_path(project: Path, system_path: str) -> None:
    # The first grep operand is a pattern, so /etc here is text, not a path...
    assert review("grep /etc src", project, system_path).verdict == "read-only"
    # ...unless -e gave the pattern, and then it is a path.
    assert review("grep -e x /etc", project, system_path).verdict == "ask"


def test_long_option_values(project: Path, system_path: str) -> None:
    assert review("ls --sort=size src", project, system_path).verdict == "read-only"
    assert review("ls --sort size src", project, system_path).verdict == "read-only"
    assert review("grep -A3 -m 2 TODO src", project, system_path).verdict == "read-only"
    assert review("grep -rn -- -x src", project, system_path).verdict == "read-only"


def test_configured_secret_pattern_makes_a_path_ask(project: Path, system_path: str) -> None:
    config = WorkspaceConfig(secret_patterns=["*.csv"])
    assert review("cat data.csv", project, system_path).verdict == "read-only"
    assert review("cat data.csv", project, system_path, config=config).verdict == "ask"


def test_cwd_changes_where_paths_resolve(project: Path, system_path: str) -> None:
    assert review("cat app.py", project, system_path, cwd="src").verdict == "read-only"
    assert review("cat ../../x", project, system_path, cwd="src").verdict == "ask"


def test_tokenizer_keeps_quoted_text_literal() -> None:
    words = split_words("""grep -n 'a;b|c' "x y" z""")
    assert [w.text for w in words] == ["grep", "-n", "a;b|c", "x y", "z"]
    assert [w.quoted for w in words] == [False, False, True, True, False]
    with pytest.raises(NotSimple, match="unterminated"):
        split_words("cat 'x")
    with pytest.raises(NotSimple, match=r"\$ expansion"):
        split_words('cat "$HOME"')


@pytest.mark.parametrize(
    ("command", "words"),
    [
        # Nothing is special inside single quotes, to any shell.
        ("grep -n 'x$' a.txt", ["grep", "-n", "x$", "a.txt"]),
        ("grep -c '\\(a\\)' a.txt", ["grep", "-c", "\\(a\\)", "a.txt"]),
        ("echo 'hi!' '`id`' '$(id)'", ["echo", "hi!", "`id`", "$(id)"]),
        # Inside double quotes a backslash stays before a character it does not escape.
        ('printf "a\\nb"', ["printf", "a\\nb"]),
        ('grep "\\." a.txt', ["grep", "\\.", "a.txt"]),
    ],
)
def test_single_quotes_and_inert_backslashes_are_literal(command: str, words: list[str]) -> None:
    assert [word.text for word in split_words(command)] == words


@pytest.mark.parametrize(
    ("command", "needle"),
    [
        ('echo "$HOME"', "$ expansion"),
        ('echo "`id`"', "backtick"),
        ('echo "hi!"', "history"),
        ('echo "a\\"b"', "backslash"),
        ('echo "a\\\\b"', "backslash"),
        ('echo "a\\$b"', "backslash"),
        ("echo a\\ b", "backslash"),
        ("echo $'x'", "$ expansion"),
        ("echo !x", "history"),
    ],
)
def test_what_a_shell_expands_outside_single_quotes_is_refused(command: str, needle: str) -> None:
    with pytest.raises(NotSimple, match=re.escape(needle)):
        split_words(command)


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf /",
        "rm -rf ~",
        "rm -rf .",
        "rm -rf ./",
        "rm -rf *",
        "rm -rf ./*",
        "rm -rf /*",
        "rm -fr /",
        "rm -r -f /",
        "rm -R .",
        "rm --recursive --force ~/",
        "rm -rf --no-preserve-root /",
        "rm -rf -- /",
        "rm -rf //",
        "rm -rf /./",
        'rm -rf "$HOME"',
        "rm -rf ${HOME}",
        "rm -rf ${HOME:?}/",
        'rm -rf "$DIR/"',
        "rm -rf $PWD",
        "rm -rf ..",
        "rm -rf ../ws",
        "\\rm -rf /",
        "/bin/rm -rf /",
        "sudo -u root rm -rf /",
        "env FOO=1 rm -rf ~",
        "timeout 5 rm -rf /",
        "command rm -rf .",
        "bash -c 'rm -rf ~'",
        'sh -lc "rm -rf /"',
        "eval rm -rf /",
        "ls; rm -rf ~",
        "echo ok && rm -rf .",
        "true | rm -rf /",
        "echo $(rm -rf ~)",
        'echo "`rm -rf /`"',
        "find / -delete",
        "find ~ -delete",
        "find . -type f -delete",
        "find . -delete",
        "dd if=/dev/zero of=/dev/sda bs=1M",
        "mkfs.ext4 /dev/nvme0n1p1",
        "wipefs -a /dev/sdb",
    ],
)
def test_circuit_breaker_denies_wipes(project: Path, system_path: str, command: str) -> None:
    home = project.parent
    result = review_command(command, project, path_env=system_path, home=home / "home")
    if "~" in command or "HOME" in command:
        result = review_command(command, project, path_env=system_path, home=home)
    assert result.verdict == "deny", (command, result.reasons)
    assert result.reasons[0].startswith("circuit breaker:")


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf build",
        "rm -rf ./node_modules",
        "rm -r src/*.o",
        "rm -f .",
        "find . -name '*.pyc' -delete",
        "find ~ -name '*.tmp' -delete",
        "find build -delete",
        "dd if=/dev/zero of=disk.img",
        "rm -rf /tmp/some-other-place",
    ],
)
def test_circuit_breaker_leaves_other_deletes_to_ask(
    project: Path, system_path: str, command: str, tmp_path: Path
) -> None:
    result = review_command(command, project, path_env=system_path, home=tmp_path / "home")
    assert result.verdict == "ask", (command, result.reasons)


def test_quoted_wipe_text_is_only_text(project: Path, system_path: str) -> None:
    assert review("echo 'rm -rf /'", project, system_path).verdict == "read-only"


def test_wipe_reason_names_what_would_go(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    reason = wipe_reason(f"rm -rf {tmp_path}", ws, home=tmp_path / "home")
    assert reason is not None and "which holds the workspace" in reason


def test_split_commands_handles_quotes_and_operators() -> None:
    assert split_commands("a 'b;c' && d \"e f\" | g\\;h") == [
        ["a", "b;c"],
        ["d", "e f"],
        ["g;h"],
    ]


def test_paths_the_system_will_not_resolve_ask_and_never_raise(
    project: Path, system_path: str
) -> None:
    chain = project / "chain"
    chain.mkdir()
    # Longer than Python's recursion limit: realpath recursed once per link.
    for index in range(1200):
        (chain / f"l{index}").symlink_to(f"l{index + 1}")
    targets = ["chain/l0", "chain/l0/x", "n" * 300, "src/" + "d" * 256 + "/x"]
    try:
        os.readlink("/proc/1/root")
    except PermissionError:
        targets.append("/proc/1/root/etc")
    for target in targets:
        for command in (f"cat {target}", f"rm -rf {target}", f"find {target} -name x"):
            result = review(command, project, system_path)
            assert result.verdict == "ask", (command, result.reasons)


def test_a_path_entry_the_system_refuses_is_skipped(project: Path, system_path: str) -> None:
    # A PATH folder whose name the file system refuses (ENAMETOOLONG) is skipped, as
    # the shell skips it, and the search goes on.
    result = review("cat README.md", project, f"/{'x' * 300}:{system_path}")
    assert result.verdict == "read-only", result.reasons


# --- grep -R and rg -L: every link below the searched folders ---------------------------


@pytest.fixture
def linked_tree(workspace: Path) -> Path:
    """A clean repository whose only links stay inside it (and one loops back)."""
    (workspace / "src" / "pkg").mkdir(parents=True)
    (workspace / "src" / "pkg" / "mod.py").write_text("TODO\n")
    (workspace / "docs").mkdir()
    (workspace / "docs" / "guide.md").write_text("TODO\n")
    (workspace / "src" / "docs").symlink_to("../docs")
    (workspace / "src" / "pkg" / "loop").symlink_to("..")
    return workspace


@pytest.mark.parametrize(
    "command",
    ["grep -R TODO src", "grep -Rn TODO", "grep --dereference-recursive TODO .", "rg -L TODO src"],
)
def test_following_links_inside_the_workspace_is_proven(
    command: str, linked_tree: Path, system_path: str
) -> None:
    result = review(command, linked_tree, system_path)
    assert result.verdict == "read-only", result.reasons


@pytest.mark.parametrize("command", ["grep -R TODO src", "grep -R TODO", "rg -L TODO src"])
def test_a_link_out_below_the_searched_folder_asks(
    command: str, linked_tree: Path, system_path: str
) -> None:
    # Deep inside, through a linked folder: grep -R and rg -L follow both.
    (linked_tree / "docs" / "etc").symlink_to("/etc")
    result = review(command, linked_tree, system_path)
    assert result.verdict == "ask"
    assert "follows the symlinks inside the folders it searches" in result.reasons[0]
    assert "leads outside the workspace" in result.reasons[1]
    # Without following (-r, rg without -L), links below the operands are not followed.
    plain = command.replace("-R", "-r").replace(" -L", "")
    assert review(plain, linked_tree, system_path).verdict == "read-only"


def test_grep_dash_r_really_follows_the_links_the_review_walks(
    linked_tree: Path, system_path: str, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TODO outside\n")
    (linked_tree / "docs" / "out").symlink_to(outside)
    grep = shutil.which("grep", path=system_path)
    assert grep is not None
    found = subprocess.run(
        [grep, "-R", "TODO", "src"], cwd=linked_tree, capture_output=True, text=True, check=False
    ).stdout
    assert "TODO outside" in found
    assert review("grep -R TODO src", linked_tree, system_path).verdict == "ask"


def test_the_link_walk_is_capped(linked_tree: Path, system_path: str) -> None:
    many = linked_tree / "src" / "many"
    many.mkdir()
    for index in range(MAX_FOLDER_WALK_ENTRIES):
        (many / f"f{index}").touch()
    result = review("grep -R TODO src", linked_tree, system_path)
    assert result.verdict == "ask"
    assert f"more than {MAX_FOLDER_WALK_ENTRIES} entries" in result.reasons[0]


# --- executables and forms added for Codex's cases ------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "egrep -R 'a|b' src",
        "fgrep -l TODO src",
        "printf 'x=%s\\n' 1",
        'printf "\\n== %s ==\\n" README.md',
        "printf -- '-%s' x",
        "tr a-z A-Z",
        "tr -d '\\r'",
        "sed -n -e 1,5p README.md",
        "sed -n --expression=1,5p README.md",
        "jq '.a | select(. == $x)' package.json",
        "grep -n 'def main()$' src/app.py",
    ],
)
def test_widened_forms_are_proven(command: str, project: Path, system_path: str) -> None:
    result = review(command, project, system_path)
    assert result.verdict == "read-only", result.reasons


@pytest.mark.parametrize(
    ("command", "needle"),
    [
        ("egrep -F x src", "egrep flag -F"),
        ("fgrep -E x src", "fgrep flag -E"),
        ("printf -v PATH x", "printf flag -v"),
        ("tr a b README.md", "at most 2 operand"),
        ("sed -n -e 1p -e 2p README.md", "sed flag -e"),
        ("sed -e 1p -n README.md", "sed flag -n"),
        ("sed -n -e 's/a/b/w out' README.md", "sed -n [-e] <line>"),
        ("jq -n '$ENV'", "$ENV"),
        ("jq -n '$ENV.HOME'", "$ENV"),
        ("jq -n '$ ENV.HOME'", "$ ENV"),
    ],
)
def test_widened_forms_still_ask(
    command: str, needle: str, project: Path, system_path: str
) -> None:
    result = review(command, project, system_path)
    assert result.verdict == "ask", command
    assert any(needle in reason for reason in result.reasons), result.reasons


def test_egrep_runs_grep_through_path(project: Path, system_path: str, tmp_path: Path) -> None:
    # egrep is a script that runs `grep -E` through PATH: a grep planted first on PATH
    # (here in the workspace, found through a relative entry) is what would run.
    planted = project / "grep"
    planted.write_text("#!/bin/sh\n")
    planted.chmod(0o755)
    egrep = shutil.which("egrep", path=system_path)
    assert egrep is not None
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "egrep").symlink_to(egrep)
    result = review("egrep x src", project, f"{tools}:.:{system_path}")
    assert result.verdict == "ask"
    assert "egrep runs grep through PATH" in result.reasons[0]
