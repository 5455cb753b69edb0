"""The review gate: only a person at a terminal moves Seeds into project knowledge."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ax_slate import (
    CloseRequest,
    ExternalContext,
    OpenRequest,
    WriteSeedRequest,
    close_slate,
    list_proposals,
    open_slate,
    read_knowledge,
    review,
    write_seed,
)
from ax_slate.cli import main
from ax_slate.gate import KNOWLEDGE_RENDER_MAX, render_knowledge
from libcommon.errors import OperationFailed, UsageError
from libcommon.paths import StateLayout

PTY_TIMEOUT_S = 30.0


def make_proposal(
    layout: StateLayout, seeds: list[tuple[str, str | None]], external_id: str = "ext"
) -> str:
    ctx = ExternalContext.for_layout(layout)
    open_slate(OpenRequest(external_session_id=external_id), ctx)
    for text, kind in seeds:
        write_seed(WriteSeedRequest(external_session_id=external_id, text=text, kind=kind), ctx)
    outcome = close_slate(CloseRequest(external_session_id=external_id), ctx).outcome
    assert outcome.proposal_id is not None, outcome.reason
    return outcome.proposal_id


@pytest.fixture
def trusted(layout: StateLayout, trust: Callable[..., None]) -> StateLayout:
    trust(layout.workspace)
    return layout


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_review_without_a_terminal_refuses_and_changes_nothing(
    run_cli, trusted: StateLayout, workspace: Path, tool_path
) -> None:
    proposal = make_proposal(trusted, [("a decision", "decision")])
    before = snapshot(trusted.root)
    result = run_cli(main, ["review", proposal, "-C", str(workspace)], "a\n", isatty=False)
    assert result.exit_code == 1
    assert "needs a person at a terminal" in result.stderr
    proc = subprocess.run(
        [tool_path("slate"), "review", proposal, "-C", str(workspace)],
        input="a\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1 and "terminal" in proc.stderr
    assert snapshot(trusted.root) == before


def test_review_decisions_land_in_knowledge_with_provenance(trusted: StateLayout) -> None:
    proposal = make_proposal(
        trusted, [("use ruff", "decision"), ("flaky test", "risk"), ("check retries", None)]
    )
    answers = iter([True, False, True])
    result = review(trusted, proposal, lambda seed, n, total: next(answers))
    assert len(result.accepted) == 2 and len(result.rejected) == 1
    knowledge = read_knowledge(trusted)
    assert [(k.kind, k.text) for k in knowledge] == [
        ("decision", "use ruff"),
        ("follow-up", "check retries"),  # untagged counts as follow-up at review
    ]
    source = knowledge[0].provenance
    assert source.proposal_id == proposal and source.trust == "external-unverified"
    assert source.origin.external_session_id == "ext"
    rendered = (trusted.memory_dir / "KNOWLEDGE.md").read_text()
    assert "## decision" in rendered and "- use ruff" in rendered and "flaky test" not in rendered
    stored = json.loads((trusted.proposals_dir / f"{proposal}.json").read_text())
    assert stored["status"] == "reviewed"
    assert sorted(stored["decisions"].values()) == ["accepted", "accepted", "rejected"]
    assert list_proposals(trusted) == []
    with pytest.raises(OperationFailed, match="already reviewed"):
        review(trusted, proposal, lambda seed, n, total: True)


def test_knowledge_is_never_appended_through_a_link(trusted: StateLayout, tmp_path: Path) -> None:
    proposal = make_proposal(trusted, [("use ruff", "decision")])
    victim = tmp_path / "elsewhere.jsonl"
    victim.write_bytes(b"")
    trusted.memory_dir.mkdir(parents=True, exist_ok=True)
    (trusted.memory_dir / "knowledge.jsonl").symlink_to(victim)
    with pytest.raises(OperationFailed, match="is a symbolic link"):
        review(trusted, proposal, lambda seed, n, total: True)
    assert victim.read_bytes() == b""


def test_an_interrupted_review_changes_nothing(trusted: StateLayout) -> None:
    proposal = make_proposal(trusted, [("one", None), ("two", None)])
    before = snapshot(trusted.root)

    def walk_away(seed, number, total):  # type: ignore[no-untyped-def]
        if number == 2:
            raise OperationFailed("gone")
        return True

    with pytest.raises(OperationFailed):
        review(trusted, proposal, walk_away)
    assert snapshot(trusted.root) == before


def test_candidates_are_listed_and_reviewable(layout: StateLayout) -> None:
    ctx = ExternalContext.for_layout(layout)
    open_slate(OpenRequest(external_session_id="u"), ctx)
    write_seed(WriteSeedRequest(external_session_id="u", text="unbound idea"), ctx)
    candidate = close_slate(CloseRequest(external_session_id="u"), ctx).outcome.candidate_id
    assert candidate is not None
    [row] = list_proposals(layout)
    assert row.kind == "unbound-candidate" and row.origin.harness == "mcp-external"
    review(layout, candidate, lambda seed, n, total: True)
    assert [k.text for k in read_knowledge(layout)] == ["unbound idea"]


@pytest.mark.parametrize("bad", ["../x", "a/b", "x.json", ""])
def test_bad_review_ids(trusted: StateLayout, bad: str) -> None:
    with pytest.raises(UsageError):
        review(trusted, bad, lambda seed, n, total: True)


def test_knowledge_rendering_is_capped(trusted: StateLayout) -> None:
    proposal = make_proposal(trusted, [("x", None)])
    review(trusted, proposal, lambda seed, n, total: True)
    [entry] = read_knowledge(trusted)
    many = [entry.model_copy(update={"text": f"fact {i}"}) for i in range(KNOWLEDGE_RENDER_MAX + 5)]
    text = render_knowledge(many)
    assert f"newest {KNOWLEDGE_RENDER_MAX} of {KNOWLEDGE_RENDER_MAX + 5}" in text
    assert "- fact 4\n" not in text and "- fact 5\n" in text


# ---- the real thing: ax-slate review on a pseudo-terminal --------------------


class Terminal:
    """Run a command on a pseudo-terminal and talk to it like a person would."""

    def __init__(self, argv: list[str]) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, close_fds=True, start_new_session=True
        )
        os.close(slave)
        self.seen = ""

    def expect(self, text: str) -> str:
        deadline = time.monotonic() + PTY_TIMEOUT_S
        while text not in self.seen:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"never saw {text!r}; got:\n{self.seen}")
            ready, _, _ = select.select([self.master], [], [], remaining)
            if ready:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError:  # the child closed the terminal
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"terminal closed before {text!r}; got:\n{self.seen}")
                self.seen += chunk.decode(errors="replace")
        found, _, self.seen = self.seen.partition(text)
        return found + text

    def send(self, line: str) -> None:
        os.write(self.master, line.encode())

    def finish(self) -> tuple[int, str]:
        rest = []
        while True:
            ready, _, _ = select.select([self.master], [], [], PTY_TIMEOUT_S)
            if not ready:
                break
            try:
                chunk = os.read(self.master, 4096)
            except OSError:
                break
            if not chunk:
                break
            rest.append(chunk.decode(errors="replace"))
        code = self.proc.wait(timeout=PTY_TIMEOUT_S)
        os.close(self.master)
        return code, self.seen + "".join(rest)


def test_review_at_a_real_terminal(trusted: StateLayout, workspace: Path, tool_path) -> None:
    proposal = make_proposal(
        trusted,
        [
            ("accept me", "decision"),
            ("reject me", "risk"),
            ("tricky \x1b[2J text", None),
        ],
    )
    term = Terminal([tool_path("slate"), "review", proposal, "-C", str(workspace)])
    shown = term.expect("[a]ccept / [r]eject: ")
    assert "Seed 1 of 3 [decision]" in shown and "accept me" in shown
    assert "trust: external-unverified" in shown and "mcp-external" in shown
    term.send("a\n")
    assert "reject me" in term.expect("[a]ccept / [r]eject: ")
    term.send("r\n")
    shown = term.expect("[a]ccept / [r]eject: ")
    assert "follow-up (untagged)" in shown
    assert "\\x1b[2J" in shown and "\x1b[2J" not in shown  # escapes shown, not obeyed
    term.send("maybe\n")
    assert "please answer" in term.expect("[a]ccept / [r]eject: ")
    term.send("accept\n")
    code, output = term.finish()
    assert code == 0, output
    assert "accepted 2, rejected 1" in output
    assert [k.text for k in read_knowledge(trusted)] == ["accept me", "tricky \x1b[2J text"]
    assert list_proposals(trusted) == []


def test_end_of_input_at_the_terminal_changes_nothing(
    trusted: StateLayout, workspace: Path, tool_path
) -> None:
    proposal = make_proposal(trusted, [("one", None), ("two", None)])
    before = snapshot(trusted.root)
    term = Terminal([tool_path("slate"), "review", proposal, "-C", str(workspace)])
    term.expect("[a]ccept / [r]eject: ")
    term.send("a\n")
    term.expect("[a]ccept / [r]eject: ")
    term.send("\x04")  # Ctrl-D: end of input
    code, output = term.finish()
    assert code == 1
    assert "nothing changed" in output
    assert snapshot(trusted.root) == before
