"""Each allowlisted executable's option grammar, checked against the real binary on this machine.

Two kinds of test. The table tests ask every binary how it parses every option
on its allowlist (no value, a required value, an optional attached value; for
tree, that the value is the next word while the cluster goes on) and compare
with allowlist.SPECS. The canary tests run the words the reviewer reads one way
through the binary and show what the binary really opens or does: a file
outside the workspace is read, a file is written, the command never ends. For
each, the reviewer must ask. A binary that is not installed skips, with why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ax_policy import review_command
from ax_policy.allowlist import FIND_NO_VALUE, FIND_VALUE, SPECS, ExecutableSpec

# Exactly the conftest's SYSTEM_PATH; the binaries run with it and the C locale so
# their messages are the ones matched here.
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
ENV = {"PATH": SYSTEM_PATH, "LC_ALL": "C", "HOME": "/nonexistent", "NO_COLOR": "1"}
TIMEOUT = 10

# Not parsed by getopt and nothing to compare: their operands are free text.
NOT_GETOPT = {
    "echo": "/usr/bin/echo reads only leading -n/-e/-E words and prints the rest",
    "which": "debianutils' which is a shell script; its operands are names, never opened",
}


# Options some installed versions do not have: those refuse the whole command, which
# runs nothing. Anything else a binary does not know is a mistake in the allowlist.
NEWER_THAN_SOME = {
    ("rg", "-d"): "ripgrep 14 added -d for --max-depth; ripgrep 13 refuses it",
}


def binary(name: str) -> str:
    found = shutil.which(name, path=SYSTEM_PATH)
    if found is None:
        pytest.skip(f"{name} is not installed on this machine")
    return found


def run(argv: list[str], cwd: Path, timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        cwd=cwd,
        env=ENV,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def expected_arity(spec: ExecutableSpec, flag: str) -> str:
    if flag in spec.valued:
        return "required"
    if flag in spec.optional:
        return "optional"
    return "none"


def options(grammar: str) -> Iterator[tuple[str, str]]:
    for name, spec in sorted(SPECS.items()):
        if spec.grammar != grammar or name in NOT_GETOPT:
            continue
        for flag in sorted({*spec.flags, *spec.valued, *spec.optional}):
            yield name, flag


# --- the table: every allowlisted option, asked of its binary -----------------------


def getopt_arity(path: str, flag: str, cwd: Path) -> str:
    """How glibc's getopt_long in ``path`` treats ``flag``, from its own messages."""
    if flag.startswith("--"):
        alone = run([path, flag], cwd).stderr
        if f"option '{flag}' requires an argument" in alone:
            return "required"
        if "unrecognized option" in alone or "is ambiguous" in alone:
            return "unknown"
        with_value = run([path, f"{flag}=%"], cwd).stderr
        return "none" if "doesn't allow an argument" in with_value else "optional"
    letter = flag[1]
    alone = run([path, flag], cwd).stderr
    if f"option requires an argument -- '{letter}'" in alone:
        return "required"
    if f"invalid option -- '{letter}'" in alone:
        return "unknown"
    # A letter without a value leaves "%" to be read as the next (invalid) option.
    attached = run([path, f"{flag}%"], cwd).stderr
    return "none" if "invalid option -- '%'" in attached else "optional"


@pytest.mark.parametrize(("name", "flag"), list(options("getopt")))
def test_getopt_options_match_the_binary(name: str, flag: str, tmp_path: Path) -> None:
    found = getopt_arity(binary(name), flag, tmp_path)
    assert found == expected_arity(SPECS[name], flag), f"{name} {flag}"


def test_the_executables_said_not_to_use_getopt_are_the_ones_with_text_operands() -> None:
    for name in NOT_GETOPT:
        assert SPECS[name].operands == "text", name


@pytest.mark.parametrize(("name", "flag"), list(options("clap")))
def test_ripgrep_options_match_the_binary(name: str, flag: str, tmp_path: Path) -> None:
    # --files needs no pattern, so a missing value is the only complaint left.
    path = binary(name)
    alone = run([path, "--files", flag], tmp_path).stderr
    required = "requires a value" in alone or "requires 1 values" in alone
    if flag.startswith("--"):
        assert required is (flag in SPECS[name].valued), f"{name} {flag}: {alone}"
        return
    if f"Found argument '{flag}'" in alone and (name, flag) in NEWER_THAN_SOME:
        return
    attached = run([path, "--files", f"{flag}%"], tmp_path).stderr
    found = "required" if required else "none" if "Found argument '-%'" in attached else "?"
    assert found == expected_arity(SPECS[name], flag), f"{name} {flag}: {alone} {attached}"


@pytest.mark.parametrize(("name", "flag"), list(options("tree")))
def test_tree_options_match_the_binary(name: str, flag: str, tmp_path: Path) -> None:
    path = binary(name)
    spec = SPECS[name]
    if flag.startswith("--"):
        alone = run([path, flag], tmp_path).stderr
        assert ("Missing argument" in alone) is (flag in spec.valued), f"{flag}: {alone}"
        return
    attached = run([path, f"{flag}%"], tmp_path).stderr
    if flag in spec.valued:
        # The value is never the rest of the cluster: it is the next word...
        assert f"Missing argument to {flag} option" in attached, attached
        # ...and the letters after it are still options.
        continued = run([path, f"{flag}%", "1"], tmp_path).stderr
        assert "Invalid argument -`%'" in continued, continued
    else:
        assert "Invalid argument -`%'" in attached, attached


@pytest.mark.parametrize(("name", "flag"), list(options("jq")))
def test_jq_options_match_the_binary(name: str, flag: str, tmp_path: Path) -> None:
    path = binary(name)
    spec = SPECS[name]
    program = '"canary"'
    if flag in spec.valued:
        given = run([path, "-n", flag, "1", program], tmp_path)
        assert given.returncode == 0 and "canary" in given.stdout, given.stderr
        # jq has no --name=value: the review refuses what jq refuses.
        joined = run([path, "-n", f"{flag}=1", program], tmp_path)
        assert joined.returncode != 0 and "Unknown option" in joined.stderr
        return
    # A flag takes no word: the program after it is still the program.
    given = run([path, "-n", flag, program], tmp_path)
    assert given.returncode == 0 and "canary" in given.stdout, (flag, given.stderr)


FIND_OPERATORS = frozenset({"(", ")", ",", "-not", "-a", "-and", "-o", "-or"})


@pytest.mark.parametrize("predicate", sorted(FIND_VALUE))
def test_find_predicates_with_a_value_take_one(predicate: str, tmp_path: Path) -> None:
    # findutils names a missing numeric argument as an invalid one.
    alone = run([binary("find"), ".", "-maxdepth", "0", predicate], tmp_path).stderr
    missing = f"missing argument to `{predicate}'"
    assert missing in alone or f"invalid argument `{predicate}' to `{predicate}'" in alone


@pytest.mark.parametrize("predicate", sorted(FIND_NO_VALUE - FIND_OPERATORS))
def test_find_predicates_without_a_value_take_none(predicate: str, tmp_path: Path) -> None:
    given = run([binary("find"), ".", "-maxdepth", "0", predicate, "-print"], tmp_path)
    assert given.returncode == 0, given.stderr


# --- canaries: what the binary opens when the reviewer reads the words its way ------


@pytest.fixture
def canary(tmp_path: Path) -> Path:
    """A file outside the workspace (tests/conftest.py's workspace is tmp_path/ws)."""
    target = tmp_path / "canary.txt"
    target.write_text("CANARY-OUTSIDE (unclosed\n")
    return target


def verdict(command: str, ws: Path) -> str:
    return review_command(command, ws, path_env=SYSTEM_PATH).verdict


def test_od_width_alone_leaves_the_next_word_an_operand(project: Path, canary: Path) -> None:
    od = binary("od")
    dumped = run([od, "-c", "-w", str(canary)], project).stdout
    assert "C   A   N   A   R   Y" in dumped
    assert verdict(f"od -c -w {canary}", project) == "ask"
    assert verdict("od -c -w .env", project) == "ask"
    assert verdict(f"od --width {canary}", project) == "ask"
    # An attached width is a width, and the operand after it is checked as a file.
    assert run([od, "-w4", "-c", "a.txt"], project).returncode == 0
    assert verdict("od -w4 -c a.txt", project) == "read-only"
    assert verdict(f"od -w4 -c {canary}", project) == "ask"


@pytest.mark.parametrize("flags", ["-f=", "-if=", "-nf=", "--file="])
def test_ripgrep_reads_the_file_after_the_equals_sign(
    project: Path, canary: Path, flags: str
) -> None:
    rg = binary("rg")
    # A pattern file that does not parse comes back whole in the error.
    shown = run([rg, f"{flags}{canary}", "README.md"], project)
    assert "CANARY-OUTSIDE" in shown.stdout + shown.stderr
    assert verdict(f"rg {flags}{canary} README.md", project) == "ask"
    (project / "pats.txt").write_text("TODO\n")
    found = run([rg, f"{flags}pats.txt", "README.md"], project)
    assert found.returncode == 0 and "TODO" in found.stdout
    assert verdict(f"rg {flags}pats.txt README.md", project) == "read-only"


@pytest.mark.parametrize("flags", ["-f==", "-if===", "--file=="])
def test_ripgrep_values_after_several_equals_signs(project: Path, canary: Path, flags: str) -> None:
    # clap (ripgrep 13) strips every leading "=", lexopt (ripgrep 14) only one: the
    # review checks both readings, so this asks whichever ripgrep is installed.
    rg = binary("rg")
    assert verdict(f"rg {flags}{canary} README.md", project) == "ask"
    version = run([rg, "--version"], project).stdout.split()[1]
    if int(version.split(".")[0]) >= 14:
        pytest.skip(f"ripgrep {version} parses with lexopt, which keeps the extra '='")
    shown = run([rg, f"{flags}{canary}", "README.md"], project)
    assert "CANARY-OUTSIDE" in shown.stdout + shown.stderr


def test_tree_takes_the_next_word_and_goes_on_reading_letters(project: Path) -> None:
    tree = binary("tree")
    victim = project / "victim.txt"
    victim.write_text("original\n")
    assert verdict("tree -Io x victim.txt", project) == "ask"
    run([tree, "-Io", "x", "victim.txt"], project)
    assert victim.read_text() != "original\n", "tree -Io x FILE writes FILE"
    for command in ("tree -Po x victim.txt", "tree -Il x", "tree -IRH x base -L 1"):
        assert verdict(command, project) == "ask", command
    # -I and -L with their values as the next words only read.
    listed = run([tree, "-aI", "node_modules", "-L", "1", "src"], project)
    assert listed.returncode == 0 and "app.py" in listed.stdout
    assert verdict("tree -aI node_modules -L 1 src", project) == "read-only"


def test_tail_obsolete_f_never_ends(project: Path) -> None:
    tail = binary("tail")
    following = ("+1f", "-1f", "+f", "-cf")
    started = [
        subprocess.Popen(
            [tail, word, "log.txt"],
            cwd=project,
            env=ENV,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for word in following
    ]
    try:
        time.sleep(1)
        # A count would have printed the file and exited long before this.
        assert all(process.poll() is None for process in started)
    finally:
        for process in started:
            process.kill()
            process.wait()
    for word in following:
        assert verdict(f"tail {word} log.txt", project) == "ask", word
    # Its count-only forms end and are proven.
    for word in ("+2", "-1", "-l", "+1c"):
        assert run([tail, word, "log.txt"], project, timeout=5).returncode == 0
        assert verdict(f"tail {word} log.txt", project) == "read-only", word
    assert run([binary("head"), "-1", "log.txt"], project).stdout == "one\n"
    assert verdict("head -1 log.txt", project) == "read-only"


def test_strings_reads_arguments_from_an_at_file(project: Path, canary: Path) -> None:
    strings = binary("strings")
    (project / "list").write_text(f"{canary}\n")
    assert "CANARY-OUTSIDE" in run([strings, "@list"], project).stdout
    assert verdict("strings @list", project) == "ask"


def test_diff_follows_links_inside_the_folders_it_compares(project: Path, canary: Path) -> None:
    diff = binary("diff")
    (project / "left").mkdir()
    (project / "right").mkdir()
    (project / "left" / "notes.txt").symlink_to(canary)
    (project / "right" / "notes.txt").write_text("mine\n")
    for flags in ([], ["-r"], ["-u"]):
        shown = run([diff, *flags, "left", "right"], project).stdout
        assert "CANARY-OUTSIDE" in shown
        assert verdict(" ".join(["diff", *flags, "left", "right"]), project) == "ask"
    # diff FILE FOLDER compares with FOLDER/FILE's name.
    assert "CANARY-OUTSIDE" in run([diff, "right/notes.txt", "left"], project).stdout
    assert verdict("diff right/notes.txt left", project) == "ask"
    # With --no-dereference it compares the link itself, and that is proven.
    kept = run([diff, "--no-dereference", "-r", "left", "right"], project).stdout
    assert "CANARY-OUTSIDE" not in kept
    assert verdict("diff --no-dereference -r left right", project) == "read-only"
    # A subfolder only counts when diff descends into it.
    (project / "left" / "notes.txt").unlink()
    (project / "left" / "notes.txt").write_text("mine\n")
    (project / "left" / "sub").mkdir()
    (project / "right" / "sub").mkdir()
    (project / "left" / "sub" / "deep.txt").symlink_to(canary)
    (project / "right" / "sub" / "deep.txt").write_text("mine\n")
    assert "CANARY-OUTSIDE" not in run([diff, "left", "right"], project).stdout
    assert verdict("diff left right", project) == "read-only"
    assert "CANARY-OUTSIDE" in run([diff, "-r", "left", "right"], project).stdout
    assert verdict("diff -r left right", project) == "ask"


def test_diff_folder_walk_is_capped(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ax_policy import command_review

    monkeypatch.setattr(command_review, "MAX_FOLDER_WALK_ENTRIES", 3)
    for side in ("big_a", "big_b"):
        (project / side).mkdir()
        for index in range(3):
            (project / side / f"f{index}.txt").write_text("x\n")
    result = review_command("diff -r big_a big_b", project, path_env=SYSTEM_PATH)
    assert result.verdict == "ask"
    assert "more than 3 entries" in result.reasons[0]


def test_a_hard_link_reads_the_outside_file(project: Path, canary: Path) -> None:
    os.link(canary, project / "inner.txt")
    assert "CANARY-OUTSIDE" in run([binary("cat"), "inner.txt"], project).stdout
    result = review_command("cat inner.txt", project, path_env=SYSTEM_PATH)
    assert result.verdict == "ask" and "hard links" in result.reasons[0]


def test_posixly_correct_makes_later_words_operands(project: Path, canary: Path) -> None:
    # A link named like a flag, after an operand: GNU reads it as -v, POSIX as a file.
    cat = binary("cat")
    (project / "-E").symlink_to(canary)
    posix = subprocess.run(
        [cat, "README.md", "-E"],
        cwd=project,
        env={**ENV, "POSIXLY_CORRECT": "1"},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert "CANARY-OUTSIDE" in posix.stdout
    assert verdict("cat README.md -E", project) == "ask"
    # The same flag before the operand is a flag under both.
    assert verdict("cat -E README.md", project) == "read-only"
