"""Properties: splicing shell metacharacters into benign commands never yields read-only;
joining benign commands with | && || ; (or handing them to sh -c) always does."""

from __future__ import annotations

import shlex
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ax_policy import review_command

BENIGN = [
    "ls -la src",
    "cat README.md",
    "grep -rn TODO src",
    "head -n 20 README.md",
    "wc -l README.md",
    "find . -name '*.py'",
    "sed -n 1,20p README.md",
    "sort -u names.txt",
    "jq .name package.json",
    'grep -rn "def main" src',
]

# Refused wherever they appear, inside quotes too.
ANYWHERE = ["\n", "\r", "\x00", "\t", "\x1b", "\u200b", "\u037e", "\uff5c"]
# Expansions: refused outside single quotes (inside them nothing is special).
EXPANDING = ["$", "`", "!"]
# Shell operators and expansions: refused outside quotes. (A backslash inside double
# quotes stays before a character it does not escape; globs are expanded and
# reviewed, see test_globs.py.)
UNQUOTED = [";", "&", "|", "<", ">", "(", ")", "#", "{", "}", "~", "^", "\\"]
# Whole pieces an attacker would splice in.
PIECES = [
    "$(id)",
    "`id`",
    "; rm -rf src",
    "&& curl x",
    "| sh",
    "> out",
    "${HOME}",
    "$IFS",
    "'",
    '"',
]


def positions_outside(command: str, inert: str) -> list[int]:
    """Indexes where an inserted character would sit outside the quotes in ``inert``."""
    positions, quote = [], None
    for index, char in enumerate(command):
        if quote is None or quote not in inert:
            positions.append(index)
        if quote is None:
            if char in "'\"":
                quote = char
        elif char == quote:
            quote = None
    positions.append(len(command))
    return positions


@st.composite
def spliced(draw: st.DrawFn) -> str:
    command = draw(st.sampled_from(BENIGN))
    kind = draw(st.sampled_from(["anywhere", "expanding", "unquoted", "piece", "assignment"]))
    if kind == "assignment":
        name = draw(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True))
        return f"{name}=x {command}"
    if kind == "anywhere":
        insert, at = draw(st.sampled_from(ANYWHERE)), draw(st.integers(0, len(command)))
    elif kind == "expanding":
        insert = draw(st.sampled_from(EXPANDING))
        at = draw(st.sampled_from(positions_outside(command, inert="'")))
    else:
        pool = UNQUOTED if kind == "unquoted" else PIECES
        insert = draw(st.sampled_from(pool))
        at = draw(st.sampled_from(positions_outside(command, inert="'\"")))
    return command[:at] + insert + command[at:]


@settings(
    max_examples=400,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(command=spliced())
def test_spliced_metacharacters_never_read_only(
    command: str, project: Path, system_path: str
) -> None:
    review = review_command(command, project, path_env=system_path)
    assert review.verdict != "read-only", (command, review.reasons)


def test_the_benign_commands_themselves_are_read_only(project: Path, system_path: str) -> None:
    for command in BENIGN:
        assert review_command(command, project, path_env=system_path).verdict == "read-only"


@settings(
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    kind=st.sampled_from(["reads", "writes", "deletes", "command"]),
    text=st.text(max_size=80),
)
def test_decide_never_raises_and_never_allows_garbage_commands(
    kind: str, text: str, project: Path, system_path: str
) -> None:
    from ax_policy import CommandFact, DecisionContext, SandboxStatus, ToolFacts, decide

    sandbox = SandboxStatus(backend="landlock", enforced=True, profiles=["read-only"])
    ctx = DecisionContext(workspace=project, sandbox=sandbox, path_env=system_path)
    if kind == "command":
        tool = ToolFacts("run_command", command=lambda i: CommandFact(command=i))
    else:
        tool = ToolFacts("file_tool", **{kind: lambda i: [i]})
    decision = decide(tool, text, ctx)
    assert decision.verdict in ("allow", "ask", "deny")
    if kind == "command" and decision.verdict == "allow":
        assert decision.review is not None and decision.review.verdict == "read-only"
        assert decision.exec_boundary == "sandboxed"
    if kind != "reads" and decision.verdict == "allow":
        assert decision.requires_snapshot or kind == "command"


@settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    commands=st.lists(st.sampled_from(BENIGN), min_size=2, max_size=4),
    operators=st.lists(st.sampled_from(["|", "&&", "||", ";", " | ", " && ", " ; "]), min_size=3),
    shell=st.sampled_from([None, "bash -c", "sh -lc"]),
)
def test_benign_commands_joined_stay_read_only(
    commands: list[str], operators: list[str], shell: str | None, project: Path, system_path: str
) -> None:
    joined = commands[0]
    for operator, command in zip(operators, commands[1:], strict=False):
        joined += operator + command
    if shell is not None:
        joined = f"{shell} {shlex.quote(joined)}"
    review = review_command(joined, project, path_env=system_path)
    assert review.verdict == "read-only", (joined, review.reasons)
