"""The hostile and everyday corpora: none hostile is read-only; the everyday share is printed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ax_policy import review_command
from ax_policy.shellwords import MAX_COMMAND_CHARS, MAX_WORDS

HERE = Path(__file__).parent


def load_corpus(name: str) -> list[str]:
    text = (HERE / name).read_text(encoding="utf-8")
    return [line for line in text.split("\n") if line and not line.startswith("##")]


# Inputs a line-based file cannot hold.
GENERATED_HOSTILE = [
    "cat README.md\x00; rm -rf src",
    "ls\nrm -rf src",
    "ls\r\nid",
    "ls\t-la",
    "cat \x1b[2JREADME.md",
    "ls\x7f",
    "cat README.md\x0bid",
    "ls " + "a" * MAX_COMMAND_CHARS,
    "echo " + " ".join(["x"] * (MAX_WORDS + 1)),
    "",
    "   ",
]


def test_corpora_are_big_enough() -> None:
    assert len(load_corpus("corpus_hostile.txt")) >= 150
    assert len(load_corpus("corpus_readonly.txt")) >= 40


@pytest.mark.parametrize("command", load_corpus("corpus_hostile.txt") + GENERATED_HOSTILE)
def test_no_hostile_command_is_read_only(command: str, project: Path, system_path: str) -> None:
    review = review_command(command, project, path_env=system_path)
    assert review.verdict != "read-only", (command, review.reasons)
    assert review.reasons and all(reason.strip() for reason in review.reasons)


def test_everyday_commands_are_proven_read_only(project: Path, system_path: str) -> None:
    commands = load_corpus("corpus_readonly.txt")
    proven, missing = [], []
    for command in commands:
        review = review_command(command, project, path_env=system_path)
        if review.verdict == "read-only":
            proven.append(command)
            continue
        # The only acceptable reason not to prove one is that its program is not installed.
        executable = command.split()[0]
        assert shutil.which(executable, path=system_path) is None, (command, review.reasons)
        assert review.reasons == [f"{executable} was not found on PATH"]
        missing.append(command)
    share = len(proven) / len(commands)
    print(
        f"\neveryday corpus: {len(proven)}/{len(commands)} proven read-only ({share:.0%}); "
        f"not installed here: {', '.join(missing) or 'none'}"
    )
    assert len(proven) + len(missing) == len(commands)
    assert proven, "nothing proven read-only: the review has stopped working"
