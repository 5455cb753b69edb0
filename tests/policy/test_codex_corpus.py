"""Codex's own test cases (corpus_codex.txt, corpus_codex_wide.txt) against ax's review.

Two sets are measured. The current set is the safe-command cases of Codex's current
is_safe_command.rs (corpus_codex.txt). The wider set adds every other POSIX command
Codex's tests treat as safe or read-only, across files and older versions
(corpus_codex_wide.txt), each with its claim: what Codex asserts safe ("asserted"),
what its bash parser accepts as a plain sequence ("parsed"), and what parse_command
summarises as a read, search or listing ("classified": read-only intent, not a safety
assertion).

ax must prove at least ``CODEX_SAFE_SHARE`` of the current set, and of the wider set's
cases Codex asserts safe or parses as plain; of the cases it only classifies as
read-only, at least ``CODEX_INTENT_SHARE`` (what models try in order to read includes
git, pagers, interpreters and awk, which ax never proves). Every case it does not prove
names its reason in the corpus, and it proves none of the unsafe cases. Cases whose
programs are not installed here are left out of the shares; a safe assertion that
Codex's current tests reverse (``superseded``) is reported apart and not counted.

An argv case is reviewed as ``ax-policy review-command -- ARGV...`` builds it,
``shlex.join(argv)``, and a shell wrapper (``bash -lc SCRIPT``) also as SCRIPT on its
own; a string case as the string. Cases run in a workspace holding every file and
folder the cases name.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ax_policy import review_command
from ax_policy.compound import SHELLS
from ax_policy.shellwords import NotSimple, split_sequence

HERE = Path(__file__).parent
CODEX_SAFE_SHARE = 0.85
CODEX_INTENT_SHARE = 0.70
ROW_KEYS = {"expect", "claim", "source", "commit", "test", "argv", "command", "ax", "superseded"}
CLAIMS = {"asserted", "parsed", "classified"}
# Shell builtins a case may name: nothing on PATH runs for them.
BUILTINS = frozenset({"cd"})

# Every file and folder the cases name, so a path argument names something real.
CODEX_FILES = {
    "Cargo.toml": '[package]\nname = "demo"\n',
    "file.txt": "one\ntwo\nthree\nfour\nfive\nsix\n",
    "README.md": "# demo\nTODO: docs\n",
    "hello.txt": "hello\n",
    "bar": "bar\n",
    "baz": "baz\n",
    "-strange-file-name": "strange\n",
    "foo/foo.txt": "foo\n",
    "-weird/foo.txt": "weird\n",
    "dir1/foo.txt": "one\n",
    "dir2/foo.txt": "two\n",
    "src/extension.ts": "// TODO\nexport {};\n",
    "src/main.rs": "fn main() {}\n",
    "core/src/spawn.rs": "// CODEX_SANDBOX_ENV_VAR\n",
    "core/src/parse_command.rs": "// parse\n" * 40,
    "codex-rs/Cargo.toml": "[workspace]\n",
    "tui/Cargo.toml": '[package]\nname = "tui"\n',
    "tui/src/history_cell.rs": "// cell\n",
    "webview/README.md": "# webview\n",
    "webview/src/index.ts": "// navigate-to-route\n",
    "exec/src/event_processor_with_human_output.rs": "// events\n",
    "ansi-escape/Cargo.toml": '[package]\nname = "ansi-escape"\n',
    "dist/index.js": "// built\n",
    "target/.keep": "",
}


def load(name: str) -> list[dict[str, Any]]:
    text = (HERE / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.split("\n") if line and not line.startswith("##")]


CURRENT = load("corpus_codex.txt")
WIDE_ONLY = load("corpus_codex_wide.txt")
WIDE = CURRENT + WIDE_ONLY


def shown(row: dict[str, Any]) -> str:
    return row["command"] if "command" in row else shlex.join(row["argv"])


def script_of(argv: list[str]) -> str | None:
    if len(argv) == 3 and os.path.basename(argv[0]) in SHELLS and argv[1] in ("-c", "-lc"):
        return argv[2]
    return None


def forms(row: dict[str, Any]) -> list[str]:
    """The strings the review is given for a case (see the module docstring)."""
    if "command" in row:
        return [row["command"]]
    script = script_of(row["argv"])
    return [shlex.join(row["argv"])] + ([script] if script is not None else [])


def programs(row: dict[str, Any]) -> list[str]:
    """The programs a case runs: its executable and each command's of its script or string."""
    if "command" in row:
        head, script = [], row["command"]
    else:
        head, script = [row["argv"][0]], script_of(row["argv"])
    if script is None:
        return head
    try:
        names = [part.words[0].text for part in split_sequence(script)]
    except NotSimple:
        return head or shlex.split(script)[:1]
    return head + [name for name in names if name not in BUILTINS]


def make_codex_workspace(root: Path) -> Path:
    for name, text in CODEX_FILES.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return Path(os.path.realpath(root))


@pytest.fixture
def codex_ws(workspace: Path) -> Path:
    """A plain repository holding every file and folder Codex's cases name."""
    return make_codex_workspace(workspace)


@pytest.fixture
def codex_hostile_ws(project: Path) -> Path:
    """The same names inside the hostile sample project (links out, a .env, a FIFO)."""
    return make_codex_workspace(project)


@dataclass
class Share:
    proven: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)

    @property
    def counted(self) -> int:
        return len(self.proven) + len(self.refused)

    def line(self, label: str) -> str:
        share = len(self.proven) / self.counted if self.counted else 0.0
        return (
            f"{label}: {len(self.proven)}/{self.counted} proven read-only ({share:.0%}); "
            f"superseded (not counted): {len(self.superseded)}; "
            f"not installed here: {len(self.missing)}"
        )


def measure(rows: list[dict[str, Any]], ws: Path, path: str) -> Share:
    """Review every safe case; a refused one must carry the corpus's reason."""
    share = Share()
    for row in rows:
        if row["expect"] != "safe":
            continue
        reviews = [review_command(form, ws, path_env=path) for form in forms(row)]
        proven = all(review.verdict == "read-only" for review in reviews)
        if row.get("superseded"):
            assert not proven, f"{shown(row)}: a superseded git case is proven"
            share.superseded.append(shown(row))
            continue
        absent = [name for name in programs(row) if not shutil.which(name, path=path)]
        if absent:
            share.missing.append(f"{shown(row)} ({', '.join(absent)} not installed)")
            continue
        if proven:
            assert "ax" not in row, f"{shown(row)} is proven now: drop its refusal note"
            share.proven.append(shown(row))
        else:
            assert "ax" in row, (shown(row), [review.reasons for review in reviews])
            # A wrapper may ask where its script alone is proven (startup files run first).
            assert all(review.verdict != "deny" for review in reviews), shown(row)
            share.refused.append(shown(row))
    return share


def test_the_corpora_hold_every_case() -> None:
    current_safe = [row for row in CURRENT if row["expect"] == "safe"]
    assert (len(current_safe), len(CURRENT) - len(current_safe)) == (19, 66)
    for row in WIDE:
        assert set(row) <= ROW_KEYS, row
        assert ("argv" in row) != ("command" in row), row
        if "argv" in row:
            assert row["argv"] and all(isinstance(word, str) for word in row["argv"]), row
        assert "ax" not in row or row["expect"] == "safe", row
        assert "superseded" not in row or "ax" in row, row
    for row in WIDE_ONLY:
        assert row["claim"] in CLAIMS and len(row["commit"]) == 40, row
    safe = [row for row in WIDE_ONLY if row["expect"] == "safe"]
    assert len(safe) >= 100
    assert {row["claim"] for row in safe} == CLAIMS


@pytest.mark.parametrize(
    "row", [row for row in WIDE if row["expect"] == "unsafe"], ids=lambda row: shown(row)[:60]
)
def test_no_codex_unsafe_case_is_read_only(
    row: dict[str, Any], codex_ws: Path, codex_hostile_ws: Path, system_path: str
) -> None:
    for ws in (codex_ws, codex_hostile_ws):
        for command in forms(row):
            review = review_command(command, ws, path_env=system_path)
            assert review.verdict != "read-only", (command, review.reasons)
            assert review.reasons and all(reason.strip() for reason in review.reasons)


def report(label: str, share: Share, floor: float) -> None:
    print(f"\n{share.line(label)}\n  refused on purpose: {'; '.join(share.refused) or 'none'}")
    assert len(share.proven) >= floor * share.counted, share.line(label)


def test_codex_current_safe_cases_are_proven(codex_ws: Path, system_path: str) -> None:
    share = measure(CURRENT, codex_ws, system_path)
    if len(share.missing) > 1:
        pytest.skip(f"too many of the programs are not installed to measure: {share.missing}")
    report("Codex current safe cases", share, CODEX_SAFE_SHARE)


def test_codex_wider_safe_cases_are_proven(codex_ws: Path, system_path: str) -> None:
    claims = [row for row in WIDE if row.get("claim", "asserted") in ("asserted", "parsed")]
    report("Codex wider safe cases", measure(claims, codex_ws, system_path), CODEX_SAFE_SHARE)


def test_codex_read_only_intent_is_mostly_proven(codex_ws: Path, system_path: str) -> None:
    intent = [row for row in WIDE if row.get("claim") == "classified"]
    report("Codex read-only intent", measure(intent, codex_ws, system_path), CODEX_INTENT_SHARE)
    union = measure(WIDE, codex_ws, system_path)
    print(union.line("Codex wider set, all claims"))
