"""``ax-slate proposals show ID``: read a proposal's Seeds without reviewing it."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest
from axtest import PLANTED_SECRETS, CliRunner

from ax_slate import (
    CloseRequest,
    ExternalContext,
    OpenRequest,
    WriteSeedRequest,
    close_slate,
    open_slate,
    review,
    write_seed,
)
from ax_slate.cli import main
from libcommon.paths import StateLayout


def closed_slate(
    layout: StateLayout, seeds: list[tuple[str, str | None]], anchors: dict[str, object]
) -> str:
    ctx = ExternalContext.for_layout(layout)
    open_slate(OpenRequest(external_session_id="ext", anchors=anchors), ctx)
    for text, kind in seeds:
        write_seed(WriteSeedRequest(external_session_id="ext", text=text, kind=kind), ctx)
    outcome = close_slate(CloseRequest(external_session_id="ext"), ctx).outcome
    found = outcome.proposal_id or outcome.candidate_id
    assert found is not None, outcome.reason
    return found


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def trusted(layout: StateLayout, trust: Callable[..., None]) -> StateLayout:
    trust(layout.workspace)
    return layout


SEEDS: list[tuple[str, str | None]] = [
    ("retries double-charge\nsee billing/refund.py", "risk"),
    ("a bell \x07 and an escape \x1b[31m in the text", None),
]


def test_show_prints_every_seed_and_changes_nothing(
    run_cli: CliRunner, trusted: StateLayout, workspace: Path
) -> None:
    proposal = closed_slate(trusted, SEEDS, {"root": "."})
    before = snapshot(trusted.root)
    result = run_cli(main, ["proposals", "show", proposal, "-C", str(workspace)])
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert out.startswith(f"proposal {proposal} (pending) from mcp-external session ext")
    assert "trust external-unverified" in out
    assert "Seed 1 of 2 [risk]" in out
    assert "  retries double-charge\n  see billing/refund.py\n" in out
    assert "Seed 2 of 2 [follow-up (untagged)]" in out
    # What an agent wrote reaches a terminal with its control characters made visible.
    assert "\x1b" not in out and "\x07" not in out
    assert "a bell \\x07 and an escape \\x1b[31m in the text" in out
    assert f"ax-slate review {proposal}" in result.stderr
    assert snapshot(trusted.root) == before


def test_show_json_is_the_stored_proposal(
    run_cli: CliRunner, trusted: StateLayout, workspace: Path
) -> None:
    proposal = closed_slate(trusted, SEEDS, {"root": "."})
    result = run_cli(main, ["proposals", "show", proposal, "--json", "-C", str(workspace)])
    assert result.exit_code == 0, result.stderr
    stored = json.loads((trusted.proposals_dir / f"{proposal}.json").read_text())
    assert json.loads(result.stdout) == stored
    # The group's own options reach `show` too: `proposals -C DIR --json show ID`.
    before = run_cli(main, ["proposals", "-C", str(workspace), "--json", "show", proposal])
    assert json.loads(before.stdout) == stored


def test_show_is_redacted(run_cli: CliRunner, trusted: StateLayout, workspace: Path) -> None:
    secret = PLANTED_SECRETS["github"]
    # Seed text is redacted when written; anchors are stored as sent and redacted when shown.
    proposal = closed_slate(trusted, [(f"token {secret}", "risk")], {"root": ".", "env": secret})
    assert secret in (trusted.proposals_dir / f"{proposal}.json").read_text()
    for extra in ([], ["--json"]):
        result = run_cli(main, ["proposals", "show", proposal, *extra, "-C", str(workspace)])
        assert result.exit_code == 0, result.stderr
        assert secret not in result.stdout and "REDACTED" in result.stdout


def test_show_a_reviewed_proposal_and_a_candidate(
    run_cli: CliRunner, trusted: StateLayout, workspace: Path
) -> None:
    proposal = closed_slate(trusted, SEEDS, {"root": "."})
    answers = iter([True, False])
    review(trusted, proposal, lambda seed, n, total: next(answers))
    result = run_cli(main, ["proposals", "show", proposal, "-C", str(workspace)])
    assert result.exit_code == 0, result.stderr
    assert f"proposal {proposal} (reviewed)" in result.stdout
    assert "reviewed: " in result.stdout
    lines = [line for line in result.stdout.splitlines() if line.startswith("Seed ")]
    assert lines[0].endswith(" accepted") and lines[1].endswith(" rejected")
    assert "ax-slate review" not in result.stderr


def test_show_an_unbound_candidate(
    run_cli: CliRunner, layout: StateLayout, workspace: Path
) -> None:
    candidate = closed_slate(layout, [("unbound idea", "decision")], {})
    result = run_cli(main, ["proposals", "show", candidate, "-C", str(workspace)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith(f"unbound-candidate {candidate} (pending)")
    assert "unbound idea" in result.stdout


def test_an_unknown_id_names_it_and_how_to_list(
    run_cli: CliRunner, layout: StateLayout, workspace: Path, state_dir: Path
) -> None:
    before = snapshot(state_dir)
    result = run_cli(main, ["proposals", "show", "prop-nosuch", "-C", str(workspace)])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "no proposal or candidate 'prop-nosuch' in this project" in result.stderr
    listing = f"ax-slate proposals -C {shlex.quote(str(workspace))}"
    assert f"ax-slate: hint: list them with `{listing}`" in result.stderr
    assert snapshot(state_dir) == before


@pytest.mark.parametrize("bad", ["../x", "a/b", "x.json"])
def test_a_malformed_id_is_a_usage_error(
    run_cli: CliRunner, layout: StateLayout, workspace: Path, bad: str
) -> None:
    result = run_cli(main, ["proposals", "show", bad, "-C", str(workspace)])
    assert result.exit_code == 2
    assert f"invalid proposal id {bad!r}" in result.stderr


def test_the_workspace_is_given_once(run_cli: CliRunner, workspace: Path) -> None:
    ws = str(workspace)
    result = run_cli(main, ["proposals", "-C", ws, "show", "prop-x", "-C", ws])
    assert result.exit_code == 2
    assert "give -C/--workspace once" in result.stderr


def test_listing_is_unchanged(run_cli: CliRunner, trusted: StateLayout, workspace: Path) -> None:
    proposal = closed_slate(trusted, SEEDS, {"root": "."})
    rows = json.loads(run_cli(main, ["proposals", "--json", "-C", str(workspace)]).stdout)
    assert [(row["id"], row["seeds"]) for row in rows] == [(proposal, 2)]
    text = run_cli(main, ["proposals", "-C", str(workspace)]).stdout
    assert text.startswith(f"{proposal}  proposal  seeds=2")
