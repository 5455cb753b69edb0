"""Codex's own safe-command test cases (corpus_codex.txt) against ax's review.

ax must prove at least ``CODEX_SAFE_SHARE`` of the cases Codex asserts safe
(among those whose programs are installed here), say in the corpus why it
refuses each other one, and prove none of the cases Codex asserts unsafe.
Every case is reviewed in the argv form, ``shlex.join(argv)`` as
``ax-policy review-command -- ARGV...`` builds it, and a ``bash -lc SCRIPT``
case also in the string form, SCRIPT on its own.
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from ax_policy import review_command
from ax_policy.compound import SHELLS
from ax_policy.shellwords import NotSimple, split_sequence

HERE = Path(__file__).parent
CODEX_SAFE_SHARE = 0.85


def load_codex() -> list[dict[str, Any]]:
    text = (HERE / "corpus_codex.txt").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.split("\n") if line and not line.startswith("##")]


CORPUS = load_codex()
SAFE = [row for row in CORPUS if row["expect"] == "safe"]
UNSAFE = [row for row in CORPUS if row["expect"] == "unsafe"]


def script_of(argv: list[str]) -> str | None:
    if len(argv) == 3 and argv[0] in SHELLS and argv[1] in ("-c", "-lc"):
        return argv[2]
    return None


def forms(argv: list[str]) -> list[str]:
    """The argv form, and for a shell wrapper the string form of its script."""
    script = script_of(argv)
    return [shlex.join(argv)] + ([script] if script is not None else [])


def programs(argv: list[str]) -> list[str]:
    """The programs a case runs: its executable and, for a wrapper, each command's."""
    script = script_of(argv)
    if script is None:
        return [argv[0]]
    try:
        return [argv[0], *(part.words[0].text for part in split_sequence(script))]
    except NotSimple:
        return [argv[0]]


@pytest.fixture
def codex_ws(project: Path) -> Path:
    """The sample project plus the files Codex's cases name."""
    (project / "Cargo.toml").write_text('[package]\nname = "demo"\n')
    (project / "file.txt").write_text("one\ntwo\nthree\nfour\nfive\nsix\n")
    return project


def test_the_corpus_holds_every_case() -> None:
    assert (len(SAFE), len(UNSAFE)) == (19, 66)
    for row in CORPUS:
        assert set(row) <= {"expect", "source", "test", "argv", "ax"}, row
        assert row["argv"] and all(isinstance(word, str) for word in row["argv"]), row
        assert "ax" not in row or row["expect"] == "safe", row


@pytest.mark.parametrize("row", UNSAFE, ids=lambda row: shlex.join(row["argv"])[:60])
def test_no_codex_unsafe_case_is_read_only(
    row: dict[str, Any], codex_ws: Path, system_path: str
) -> None:
    for command in forms(row["argv"]):
        review = review_command(command, codex_ws, path_env=system_path)
        assert review.verdict != "read-only", (command, review.reasons)
        assert review.reasons and all(reason.strip() for reason in review.reasons)


def test_codex_safe_cases_are_proven(codex_ws: Path, system_path: str) -> None:
    proven: list[str] = []
    refused: list[str] = []
    missing: list[str] = []
    for row in SAFE:
        shown = shlex.join(row["argv"])
        absent = [
            name for name in programs(row["argv"]) if not shutil.which(name, path=system_path)
        ]
        if absent:
            missing.append(f"{shown} ({', '.join(absent)} not installed)")
            continue
        reviews = [
            review_command(form, codex_ws, path_env=system_path) for form in forms(row["argv"])
        ]
        if all(review.verdict == "read-only" for review in reviews):
            assert "ax" not in row, f"{shown} is proven now: drop its refusal note"
            proven.append(shown)
        else:
            assert "ax" in row, (shown, [review.reasons for review in reviews])
            assert all(review.verdict == "ask" for review in reviews), shown
            refused.append(shown)
    counted = len(SAFE) - len(missing)
    if counted < len(SAFE) - 1:
        pytest.skip(f"too many of the programs are not installed to measure: {missing}")
    share = len(proven) / counted
    print(
        f"\nCodex safe cases: {len(proven)}/{counted} proven read-only ({share:.0%}); "
        f"refused on purpose: {', '.join(refused) or 'none'}; "
        f"not installed here: {', '.join(missing) or 'none'}"
    )
    assert share >= CODEX_SAFE_SHARE
