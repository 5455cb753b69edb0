"""Globs: expanded as bash and dash expand them, and proven only when every match is.

The expansion is compared with what the real shells hand a command (with default
options, and with dotglob for the second expansion the review checks); the review
is then checked on the argv those matches make, in every order the locale's
collation could give them, and on the hostile names a repository can plant.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ax_policy.command_review import review
from ax_policy.globs import MAX_GLOB_MATCHES, MAX_GLOB_SCAN_ENTRIES, Budget, expand
from ax_policy.shellwords import NotSimple

NAMES = [
    "a.txt",
    "b.txt",
    "B.txt",
    "x y.txt",
    "[a].txt",
    "c*d",
    "1p",
    ".hidden",
    ".dot.txt",
    "src/app.py",
    "src/util.py",
    "src/.secret.py",
    "docs/guide.md",
    "docs/sub/deep.md",
]

PATTERNS = [
    "*",
    "*.txt",
    "?.txt",
    "[ab].txt",
    "[a-b]*",
    "[]a]*",
    "[a",
    "a]",
    "c*",
    "src/*.py",
    "*/*.py",
    "*/",
    "s*/*.py",
    "src/*",
    ".h*",
    ".*.txt",
    "*.none",
    "*/*/*.md",
    "**/*.py",
    "l*/*.py",
    "d*",
    "./*.txt",
    "src/./?til.py",
    "x*",
]


@pytest.fixture
def tree(workspace: Path) -> Path:
    for name in NAMES:
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")
    (workspace / "lnk").symlink_to("src")
    (workspace / "dead").symlink_to("nowhere")
    return workspace


def shell_expansion(shell: str, pattern: str, cwd: Path, *, dotglob: bool = False) -> list[str]:
    found = shutil.which(shell)
    if found is None:
        pytest.skip(f"{shell} is not installed")
    setup = "shopt -s dotglob; " if dotglob else ""
    argv = [found, "-c", f"{setup}for f in {pattern}; do printf '%s\\n' \"$f\"; done"]
    if shell == "bash":
        argv[1:1] = ["--noprofile", "--norc"]
    done = subprocess.run(
        argv, cwd=cwd, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.mark.parametrize("pattern", PATTERNS)
def test_the_expansion_is_bashs(pattern: str, tree: Path) -> None:
    for dotglob in (False, True):
        ours = expand(pattern, tree, tree, dotglob=dotglob, budget=Budget())
        assert ours == shell_expansion("bash", pattern, tree, dotglob=dotglob), (pattern, dotglob)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_the_expansion_is_dashs(pattern: str, tree: Path) -> None:
    ours = expand(pattern, tree, tree, dotglob=False, budget=Budget())
    assert ours == shell_expansion("dash", pattern, tree), pattern


@pytest.mark.parametrize(
    ("pattern", "needle"),
    [
        ("/etc/*", "starts at the root"),
        ("../*", "climbs out"),
        ("src/../*", "climbs out"),
        (".*", "may match . or .."),
        (".?", "may match . or .."),
        ("src//*.py", "empty folder name"),
        ("[[:alpha:]]*", "character class"),
        ("[z-a]*", "backwards range"),
        # A folder reached through a link out is not even listed.
        ("e*/*", "looks inside escape, which leads outside"),
        ("e*", "matches escape, which leads outside"),
    ],
)
def test_what_the_expansion_refuses(pattern: str, needle: str, tree: Path) -> None:
    (tree / "escape").symlink_to("/etc")
    with pytest.raises(NotSimple, match=needle.replace(".", r"\.")):
        expand(pattern, tree, tree, dotglob=False, budget=Budget())


def test_a_name_the_locale_decides_about_is_refused(tree: Path) -> None:
    (tree / "caf\u00e9.txt").write_text("x\n")
    with pytest.raises(NotSimple, match="depends on the locale"):
        expand("*.txt", tree, tree, dotglob=False, budget=Budget())
    # A literal folder name is not listed, so its own names do not matter.
    assert expand("src/*.py", tree, tree, dotglob=False, budget=Budget()) == [
        "src/app.py",
        "src/util.py",
    ]


def test_the_caps(workspace: Path, system_path: str) -> None:
    many = workspace / "many"
    many.mkdir()
    for index in range(MAX_GLOB_MATCHES + 1):
        (many / f"f{index}").touch()
    status = review("ls many/*", workspace, path_env=system_path)
    assert status.verdict == "ask" and f"more than {MAX_GLOB_MATCHES} names" in status.reasons[0]
    assert review("ls many/f1?", workspace, path_env=system_path).verdict == "read-only"
    for index in range(MAX_GLOB_SCAN_ENTRIES):
        (many / f"g{index}").touch()
    status = review("ls many/f1?", workspace, path_env=system_path)
    assert status.verdict == "ask"
    assert f"more than {MAX_GLOB_SCAN_ENTRIES} folder entries" in status.reasons[0]


# --- the review of the expanded argv -----------------------------------------------------


def verdict(command: str, ws: Path, path: str, **kw: object) -> tuple[str, list[str]]:
    outcome = review(command, ws, path_env=path, **kw)  # type: ignore[arg-type]
    return outcome.verdict, outcome.reasons


@pytest.mark.parametrize(
    "command",
    [
        "cat *.txt",
        "wc -l src/*.py",
        "ls -d */",
        "grep -n x *.txt src/*",
        "rg -g *.py x src",
        "head -n 1 [ab].txt",
        "cat *.none",
        "cd src && cat *.py",
        "sh -c 'cat src/*.py'",
    ],
)
def test_a_glob_whose_matches_are_all_proven_is_proven(
    command: str, tree: Path, system_path: str
) -> None:
    status, reasons = verdict(command, tree, system_path)
    assert status == "read-only", reasons


def test_the_argv_is_what_bash_hands_the_command(tree: Path, system_path: str) -> None:
    result = review("grep -c x *.txt", tree, path_env=system_path)
    assert result.argv == [
        "grep",
        "-c",
        "x",
        *shell_expansion("bash", "*.txt", tree),
    ]
    # A glob in a flag's value place: `-g *.py` is -g with whatever *.py expands to.
    (tree / "app.py").write_text("x\n")
    (tree / "zed.py").write_text("x\n")
    result = review("rg -g *.py x", tree, path_env=system_path)
    assert result.argv == ["rg", "-g", "app.py", "zed.py", "x"]


@pytest.mark.parametrize(
    ("planted", "command", "needle"),
    [
        # A file named like a flag becomes that flag where the shell puts it.
        ("-o", "sort *", "sort flag -o"),
        ("--pre=sh", "rg x *", "rg flag --pre="),
        ("-n", "cat *", "could read as an option"),
        ("--files0-from=list", "wc *.txt --files0-from=*", "--files0-from"),
        ("@list", "strings *", "the file 'list' that '@list' names"),
    ],
)
def test_a_match_named_like_a_flag_is_that_flag(
    planted: str, command: str, needle: str, tree: Path, system_path: str
) -> None:
    (tree / planted).write_text("x\n")
    status, reasons = verdict(command, tree, system_path)
    assert status == "ask" and needle in " ".join(reasons), reasons


def test_every_order_the_locale_could_give_is_proven(tree: Path, system_path: str) -> None:
    # In byte order `sed -n *` reads 1p as its script and the rest as files; another
    # collation could put a.txt first, and sed would read a.txt as its script.
    for name in os.listdir(tree):
        if not name.startswith("1p") and name not in ("a.txt", "b.txt"):
            path = tree / name
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    status, reasons = verdict("sed -n *", tree, system_path)
    assert status == "ask"
    assert "with the matches of * in another order" in reasons[0], reasons
    assert verdict("sed -n 1p *.txt", tree, system_path)[0] == "read-only"


def test_dotfiles_count_as_if_dotglob_were_on(tree: Path, system_path: str) -> None:
    (tree / ".env").write_text("TOKEN=x\n")
    status, reasons = verdict("cat *", tree, system_path)
    assert status == "ask" and "'.env' is secret-named" in reasons[0], reasons
    assert verdict("cat src/*.py", tree, system_path)[0] == "read-only"


@pytest.mark.parametrize(
    ("command", "needle"),
    [
        ("cat l*/*.py", "read-only"),
        ("cat out*/*", "leads outside"),
        ("cat out/*", "leads outside"),
        ("cat *.lnk", "leads outside"),
        # A match leading out asks even where the command reads it as text.
        ("echo *.lnk", "matches passwd.lnk, which leads outside"),
    ],
)
def test_a_glob_through_a_link_out_asks(
    command: str, needle: str, tree: Path, system_path: str, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("x\n")
    (tree / "out").symlink_to(outside)
    (tree / "passwd.lnk").symlink_to("/etc/passwd")
    status, reasons = verdict(command, tree, system_path)
    if needle == "read-only":
        assert status == "read-only", reasons
    else:
        assert status == "ask" and needle in reasons[0], reasons


@pytest.mark.parametrize(
    ("command", "needle"),
    [
        ("bash -lc 'cat *.txt'", "startup files"),
        ("bash -c 'cat *.txt'", "startup files"),
        ("zsh -c 'cat *.txt'", "startup files"),
        ("sh -lc 'cat *.txt'", "startup files"),
        ("bash -lc \"sh -c 'cat *.txt'\"", "startup files"),
        ("bash -c *", "a glob in the words of bash"),
        ("c?t a.txt", "is a glob"),
        ("cat 'src'/*.py", "joined to quoted text"),
    ],
)
def test_globs_ask_where_the_shell_may_not_expand_them_so(
    command: str, needle: str, tree: Path, system_path: str
) -> None:
    status, reasons = verdict(command, tree, system_path, home=tree.parent)
    assert status == "ask" and needle in " ".join(reasons), reasons


# --- bash runs exactly the argv the review proved ------------------------------------------

_STUB = """#!{python}
import json, os, sys
with open(os.environ["AX_STUB_LOG"], "a") as log:
    log.write(json.dumps([os.getcwd(), os.path.basename(sys.argv[0]), *sys.argv[1:]]) + "\\n")
"""


@pytest.mark.parametrize(
    ("command", "last", "where"),
    [
        ("cat *.txt src/*.py", "cat *.txt src/*.py", "."),
        ("grep -e * src", "grep -e * src", "."),
        ("cd src && cat *.py", "cat *.py", "src"),
        ("cd docs; ls -d */ *.md", "ls -d */ *.md", "docs"),
    ],
)
def test_bash_runs_the_argv_the_review_proved(
    command: str, last: str, where: str, tree: Path, system_path: str, tmp_path: Path
) -> None:
    for odd in ("[a].txt", "c*d", "x y.txt", "dead", "lnk"):
        (tree / odd).unlink()
    assert review(command, tree, path_env=system_path).verdict == "read-only"
    proven = review(last, tree, path_env=system_path, cwd=where)
    assert proven.verdict == "read-only" and proven.argv is not None
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for name in ("cat", "ls", "grep"):
        (stubs / name).write_text(_STUB.format(python=sys.executable))
        (stubs / name).chmod(0o755)
    log = tmp_path / "runs.jsonl"
    bash = shutil.which("bash", path=system_path)
    assert bash is not None
    subprocess.run(
        [bash, "--noprofile", "--norc", "-c", command],
        env={"PATH": str(stubs), "AX_STUB_LOG": str(log), "LC_ALL": "C"},
        cwd=tree,
        check=True,
        timeout=30,
    )
    ran = json.loads(log.read_text().splitlines()[-1])
    assert (Path(ran[0]), ran[1:]) == (Path(os.path.realpath(tree / where)), proven.argv)


def test_a_login_file_can_change_what_a_glob_matches(
    tree: Path, system_path: str, tmp_path: Path
) -> None:
    """Why globs ask inside wrappers that read startup files: here .bash_profile turns on
    dotglob and nocaseglob, and `bash -lc 'cat b*'` reads .env and B.txt."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bash_profile").write_text("shopt -s dotglob nocaseglob\n")
    (tree / ".env").write_text("TOKEN=x\n")
    bash = shutil.which("bash", path=system_path)
    assert bash is not None
    ran = subprocess.run(
        [bash, "-lc", "printf '%s\\n' * b*"],
        cwd=tree,
        env={"PATH": "/usr/bin:/bin", "HOME": str(home), "LC_ALL": "C"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert ".env" in ran and "B.txt" in ran
    assert "B.txt" not in expand("b*", tree, tree, dotglob=False, budget=Budget())
    status, reasons = verdict("bash -lc 'cat b*'", tree, system_path, home=home)
    assert status == "ask" and "startup files" in reasons[0], reasons
    # Without the wrapper (as ax-exec runs a string) the same glob is proven.
    assert verdict("cat b*", tree, system_path, home=home)[0] == "read-only"
