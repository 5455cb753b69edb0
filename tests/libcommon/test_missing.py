"""libcommon.missing on the shells' and make's own words (ax-check's tests run the real tools)."""

from __future__ import annotations

import pytest

from libcommon.missing import Missing, MissingScanner


def explained(output: str, status: int) -> list[Missing]:
    scanner = MissingScanner()
    for line in output.splitlines():
        scanner.line(line)
    scanner.finish()
    return scanner.explained(status)


@pytest.mark.parametrize(
    ("output", "status", "program"),
    [
        ("> dev\n> vite\n\nsh: 1: vite: not found\n", 127, "vite"),
        ("bash: tsc: command not found\n", 127, "tsc"),
        ("/bin/sh: line 1: next: command not found\n", 127, "next"),
        ("zsh:1: command not found: nodemon\n", 127, "nodemon"),
        ("env: 'node': No such file or directory\n", 127, "node"),
        # make exits 2, and says the recipe's command exited 127.
        (
            "make: mypy: No such file or directory\nmake: *** [Makefile:2: lint] Error 127\n",
            2,
            "mypy",
        ),
        ("make[1]: black: No such file or directory\nmake[1]: *** [x] Error 127\n", 2, "black"),
    ],
)
def test_a_missing_program_is_recognised(output: str, status: int, program: str) -> None:
    assert [item.program for item in explained(output, status)] == [program]


@pytest.mark.parametrize(
    ("output", "status"),
    [
        ("sh: 1: vite: not found\n", 1),  # named, but the command did not exit 127
        ("Error: Cannot find module 'express'\n", 1),
        ("Module not found: Error: Can't resolve './App'\n", 1),
        ("make: *** [Makefile:2: test] Error 1\n", 2),
        ("", 0),
        ("something went wrong\n", 127),  # 127 with no line that names a program
    ],
)
def test_other_failures_are_not_a_missing_program(output: str, status: int) -> None:
    assert explained(output, status) == []
