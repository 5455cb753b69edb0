"""External slates: per-id files, server-written origin and trust, close into review."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ax_slate import (
    HANDLERS,
    CloseRequest,
    ExternalContext,
    OpenRequest,
    WriteSeedRequest,
    close_slate,
    open_slate,
    write_seed,
)
from ax_slate.cli import main
from ax_slate.external import SEED_MAX_CHARS, SEEDS_MAX, STALE_AFTER_S
from libcommon import clock
from libcommon.errors import CorruptStore, OperationFailed, UsageError
from libcommon.paths import StateLayout, project_slug

T0 = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


class FixedClock:
    def __init__(self, moment: datetime) -> None:
        self.moment = moment

    def now(self) -> datetime:
        return self.moment


@pytest.fixture
def ctx(layout: StateLayout) -> ExternalContext:
    return ExternalContext.for_layout(layout)


def slate_file(layout: StateLayout, external_id: str) -> Path:
    return layout.external_slates_dir / f"{external_id}.json"


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def opened(ctx: ExternalContext, external_id: str = "a", **anchors: object) -> None:
    open_slate(OpenRequest(external_session_id=external_id, anchors=dict(anchors)), ctx)


def seed(ctx: ExternalContext, text: str, external_id: str = "a", kind: str | None = None):  # type: ignore[no-untyped-def]
    return write_seed(WriteSeedRequest(external_session_id=external_id, text=text, kind=kind), ctx)


# ---- open -------------------------------------------------------------------


def test_open_stores_anchors_exactly_and_second_open_is_a_no_op(
    ctx: ExternalContext, layout: StateLayout
) -> None:
    anchors = {"root": "/repo/src", "nested": {"list": [1, 2.5, None, "x"]}, "odd key": True}
    first = open_slate(OpenRequest(external_session_id="a", anchors=anchors), ctx)
    stored = json.loads(slate_file(layout, "a").read_text())
    assert stored["anchors"] == anchors
    assert stored["externalSessionId"] == "a" and stored["seeds"] == []
    before = slate_file(layout, "a").read_bytes()
    again = open_slate(
        OpenRequest(external_session_id="a", anchors={"root": "/elsewhere"}, workspace_id="w"),
        ctx,
    )
    assert again == first
    assert slate_file(layout, "a").read_bytes() == before
    assert sorted(p.name for p in layout.external_slates_dir.glob("*.json")) == ["a.json"]


@pytest.mark.parametrize(
    "bad_id",
    ["../x", "..", "a/b", "a.json", "", "a" * 129, "a b", "é", "a\x00b", "/abs", "x\n"],
)
def test_traversal_and_malformed_ids_are_refused_before_any_path(
    ctx: ExternalContext, state_dir: Path, bad_id: str
) -> None:
    for call in (
        lambda: open_slate(OpenRequest(external_session_id=bad_id), ctx),
        lambda: seed(ctx, "text", external_id=bad_id),
        lambda: close_slate(CloseRequest(external_session_id=bad_id), ctx),
    ):
        with pytest.raises(UsageError, match="invalid externalSessionId"):
            call()
    assert files_under(state_dir) == []


def test_traversal_id_via_cli(run_cli, workspace: Path, state_dir: Path) -> None:
    stdin = json.dumps({"externalSessionId": "../../escape", "anchors": {}})
    result = run_cli(main, ["open", "-C", str(workspace)], stdin)
    assert result.exit_code == 2
    assert "invalid externalSessionId" in result.stderr
    assert files_under(state_dir) == []
    assert not (state_dir.parent / "escape.json").exists()


def test_ids_are_isolated_on_disk(ctx: ExternalContext, layout: StateLayout) -> None:
    opened(ctx, "alpha", root="/a")
    opened(ctx, "beta", root="/b")
    seed(ctx, "alpha's secret plan", external_id="alpha")
    seed(ctx, "beta's note", external_id="beta")
    alpha = slate_file(layout, "alpha").read_text()
    beta = slate_file(layout, "beta").read_text()
    assert "alpha's secret plan" in alpha and "alpha's secret plan" not in beta
    assert "beta's note" in beta and "beta's note" not in alpha
    # One file per id, and nothing shared between them but the folder.
    names = sorted(p.name for p in layout.external_slates_dir.iterdir())
    assert names == ["alpha.json", "alpha.lock", "beta.json", "beta.lock"]
    # An id that is a prefix or variant of another reaches nothing of it.
    with pytest.raises(OperationFailed, match="no external slate 'alph'"):
        seed(ctx, "x", external_id="alph")
    assert not slate_file(layout, "alph").exists()


def test_no_verb_lists_or_reads_across_ids(run_cli) -> None:
    help_text = run_cli(main, ["--help"]).stdout
    verbs = {
        line.split()[0] for line in help_text.split("Commands:")[1].splitlines() if line.strip()
    }
    assert verbs == {
        "open", "write-seed", "close", "start", "record", "save-output", "trail", "notes",
        "note", "frame", "recall", "search", "proposals", "review", "archive",
        # Reads the project's memory documents only, never an external slate.
        "memory",
    }  # fmt: skip
    assert set(HANDLERS) == {"open", "writeSeed", "close"}


# ---- write-seed -------------------------------------------------------------


def test_seed_origin_and_trust_are_server_written(
    ctx: ExternalContext, layout: StateLayout
) -> None:
    opened(ctx)
    request = WriteSeedRequest.model_validate(
        {
            "externalSessionId": "a",
            "text": "refund path double-charges",
            "kind": "risk",
            "origin": {"harness": "ax-agent", "externalSessionId": "someone-else"},
            "trust": "verified",
        }
    )
    stored = write_seed(request, ctx)
    assert stored.trust == "external-unverified"
    assert stored.origin.harness == "mcp-external" and stored.origin.external_session_id == "a"
    on_disk = json.loads(slate_file(layout, "a").read_text())["seeds"][0]
    assert on_disk["trust"] == "external-unverified"
    assert on_disk["origin"] == {"harness": "mcp-external", "externalSessionId": "a"}


def test_unknown_kind_is_refused(run_cli, workspace: Path, layout: StateLayout, ctx) -> None:
    opened(ctx)
    before = slate_file(layout, "a").read_bytes()
    stdin = json.dumps({"externalSessionId": "a", "text": "t", "kind": "not-a-real-kind"})
    result = run_cli(main, ["write-seed", "-C", str(workspace)], stdin)
    assert result.exit_code == 2
    assert "'kind'" in result.stderr
    assert slate_file(layout, "a").read_bytes() == before


def test_untagged_seed_is_stored_untagged(ctx: ExternalContext) -> None:
    opened(ctx)
    assert seed(ctx, "later: check the retry path").kind is None


def test_seed_text_is_redacted_before_it_is_persisted(
    ctx: ExternalContext, layout: StateLayout
) -> None:
    opened(ctx)
    secret = "sk-ant-api03-" + "Z" * 40
    stored = seed(ctx, f"use ANTHROPIC_API_KEY={secret} for the test")
    assert secret not in stored.text
    assert secret not in slate_file(layout, "a").read_text()
    close_slate(CloseRequest(external_session_id="a"), ctx)
    assert all(secret not in p.read_text() for p in files_under(layout.root))


def test_seed_caps(ctx: ExternalContext, layout: StateLayout) -> None:
    opened(ctx)
    with pytest.raises(UsageError, match=f"cap is {SEED_MAX_CHARS}"):
        seed(ctx, "x" * (SEED_MAX_CHARS + 1))
    seed(ctx, "x" * SEED_MAX_CHARS)
    for i in range(1, SEEDS_MAX):
        seed(ctx, f"seed {i}")
    before = slate_file(layout, "a").read_bytes()
    with pytest.raises(OperationFailed, match=f"already holds {SEEDS_MAX} seeds"):
        seed(ctx, "one too many")
    assert slate_file(layout, "a").read_bytes() == before
    # An exact duplicate of a stored seed is still answered (it is stored once).
    assert seed(ctx, "seed 7").text == "seed 7"


def test_exact_duplicates_are_stored_once(ctx: ExternalContext, layout: StateLayout) -> None:
    opened(ctx)
    first = seed(ctx, "same fact")
    again = seed(ctx, "same fact", kind="risk")
    seed(ctx, "same fact.")  # near-duplicates are kept
    assert again.id == first.id
    texts = [s["text"] for s in json.loads(slate_file(layout, "a").read_text())["seeds"]]
    assert texts == ["same fact", "same fact."]


def test_write_to_unopened_or_closed_slate(ctx: ExternalContext) -> None:
    with pytest.raises(OperationFailed, match="no external slate 'a'"):
        seed(ctx, "x")
    opened(ctx)
    close_slate(CloseRequest(external_session_id="a"), ctx)
    with pytest.raises(OperationFailed, match="was closed"):
        seed(ctx, "x")


def test_concurrent_writer_processes_lose_nothing(layout: StateLayout, ctx) -> None:
    opened(ctx, "shared")
    script = (
        "import sys\n"
        "from ax_slate import ExternalContext, WriteSeedRequest, write_seed\n"
        "from libcommon.paths import state_layout\n"
        "ctx = ExternalContext.for_layout(state_layout(sys.argv[1]))\n"
        "for i in range(25):\n"
        "    write_seed(WriteSeedRequest(external_session_id='shared',\n"
        "               text=f'writer {sys.argv[2]} seed {i}'), ctx)\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(layout.workspace), str(n)])
        for n in range(4)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    seeds = json.loads(slate_file(layout, "shared").read_text())["seeds"]
    assert sorted(s["text"] for s in seeds) == sorted(
        f"writer {n} seed {i}" for n in range(4) for i in range(25)
    )
    assert len({s["id"] for s in seeds}) == 100


# ---- close ------------------------------------------------------------------


def read_json(path: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(path.read_text())


def test_close_without_trust_writes_an_unbound_candidate(
    ctx: ExternalContext, layout: StateLayout
) -> None:
    opened(ctx, root=".")
    seed(ctx, "a risk", kind="risk")
    result = close_slate(CloseRequest(external_session_id="a"), ctx)
    outcome = result.outcome
    assert result.closed and not result.already_closed
    assert outcome.bound_workspace_id is None and outcome.proposal_id is None
    candidate = read_json(layout.candidates_dir / f"{outcome.candidate_id}.json")
    assert candidate["kind"] == "unbound-candidate" and candidate["workspaceId"] is None
    assert candidate["anchors"] == {"root": "."}
    assert [s["text"] for s in candidate["seeds"]] == ["a risk"]
    assert not layout.proposals_dir.exists()
    kept = read_json(slate_file(layout, "a"))
    assert kept["closedAt"] is not None and kept["seeds"][0]["text"] == "a risk"


def test_close_binds_to_the_trusted_workspace_holding_anchors_root(
    ctx: ExternalContext, layout: StateLayout, trust: Callable[..., None], tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    (repo / "src" / "billing").mkdir(parents=True)
    trust(repo)
    opened(ctx, root=str(repo / "src" / "billing"))
    seed(ctx, "idempotency key never set", kind="risk")
    outcome = close_slate(CloseRequest(external_session_id="a"), ctx).outcome
    assert outcome.bound_workspace_id == project_slug(repo)
    target = layout.root / "projects" / project_slug(repo) / "proposals"
    proposal = read_json(target / f"{outcome.proposal_id}.json")
    assert proposal["kind"] == "proposal" and proposal["trust"] == "external-unverified"
    assert proposal["origin"] == {"harness": "mcp-external", "externalSessionId": "a"}
    assert not layout.candidates_dir.exists()


def test_untrusted_anchor_root_never_falls_back_to_a_guess(
    ctx: ExternalContext, layout: StateLayout, trust: Callable[..., None], tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    trust(layout.workspace)  # the server's workspace is trusted, the anchor's is not
    opened(ctx, root=str(other))
    seed(ctx, "x")
    outcome = close_slate(CloseRequest(external_session_id="a"), ctx).outcome
    assert outcome.proposal_id is None and outcome.candidate_id is not None
    assert "not inside a trusted workspace" in outcome.reason


def test_no_root_uses_the_trusted_server_workspace(
    ctx: ExternalContext, layout: StateLayout, trust: Callable[..., None]
) -> None:
    trust(layout.workspace)
    opened(ctx)
    seed(ctx, "x")
    outcome = close_slate(CloseRequest(external_session_id="a"), ctx).outcome
    assert outcome.bound_workspace_id == layout.slug
    assert (layout.proposals_dir / f"{outcome.proposal_id}.json").exists()


def test_explicit_workspace_id(
    ctx: ExternalContext, layout: StateLayout, trust: Callable[..., None], tmp_path: Path
) -> None:
    trusted = tmp_path / "trusted"
    trusted.mkdir()
    trust(trusted)
    open_slate(OpenRequest(external_session_id="good", workspace_id=project_slug(trusted)), ctx)
    seed(ctx, "x", external_id="good")
    good = close_slate(CloseRequest(external_session_id="good"), ctx).outcome
    assert good.bound_workspace_id == project_slug(trusted) and good.proposal_id

    # A made-up id, or the slug of a folder nobody trusted, binds nothing.
    for name, wid in (("guess", "repo-000000000000"), ("untrusted", layout.slug)):
        open_slate(OpenRequest(external_session_id=name, workspace_id=wid), ctx)
        seed(ctx, "x", external_id=name)
        outcome = close_slate(CloseRequest(external_session_id=name), ctx).outcome
        assert outcome.proposal_id is None and outcome.candidate_id is not None
        assert "names no trusted workspace" in outcome.reason
    assert not (layout.root / "projects" / "repo-000000000000").exists()


def test_injected_trust_predicate(layout: StateLayout) -> None:
    asked: list[Path] = []

    def only_server(path: Path) -> bool:
        asked.append(path)
        return path == layout.workspace

    ctx = ExternalContext(layout, only_server, list)
    opened(ctx)
    seed(ctx, "x")
    outcome = close_slate(CloseRequest(external_session_id="a"), ctx).outcome
    assert outcome.bound_workspace_id == layout.slug
    assert asked == [layout.workspace]


def test_corrupt_trust_file_is_a_hard_error(
    ctx: ExternalContext, layout: StateLayout, state_dir: Path
) -> None:
    opened(ctx)
    seed(ctx, "x")
    (state_dir / "trust.json").write_text("{nope")
    before = slate_file(layout, "a").read_bytes()
    with pytest.raises(CorruptStore):
        close_slate(CloseRequest(external_session_id="a"), ctx)
    assert slate_file(layout, "a").read_bytes() == before
    assert not layout.candidates_dir.exists()


def test_second_close_reports_the_first(ctx: ExternalContext, layout: StateLayout) -> None:
    opened(ctx)
    seed(ctx, "x")
    first = close_slate(CloseRequest(external_session_id="a"), ctx)
    second = close_slate(CloseRequest(external_session_id="a"), ctx)
    assert second.already_closed and second.outcome == first.outcome
    assert len(list(layout.candidates_dir.glob("*.json"))) == 1


def test_close_with_no_seeds_sends_nothing_to_review(
    ctx: ExternalContext, layout: StateLayout
) -> None:
    opened(ctx, root="/nowhere")
    outcome = close_slate(CloseRequest(external_session_id="a"), ctx).outcome
    assert outcome.candidate_id is None and outcome.proposal_id is None
    assert "no seeds" in outcome.reason
    assert read_json(slate_file(layout, "a"))["anchors"] == {"root": "/nowhere"}


# ---- the stale close --------------------------------------------------------


def test_a_stale_slate_is_closed_on_the_next_call(
    ctx: ExternalContext, layout: StateLayout
) -> None:
    window = timedelta(seconds=STALE_AFTER_S)
    with clock.use(FixedClock(T0)):
        opened(ctx, "old")
        seed(ctx, "left behind", external_id="old")
    with clock.use(FixedClock(T0 + window - timedelta(seconds=1))):
        opened(ctx, "b")  # not yet stale
    assert read_json(slate_file(layout, "old"))["closedAt"] is None
    with clock.use(FixedClock(T0 + window + timedelta(seconds=1))):
        opened(ctx, "c")  # any slate call in the project triggers the sweep
    old = read_json(slate_file(layout, "old"))
    assert old["closedAt"] is not None and old["closeOutcome"]["stale"] is True
    candidate = read_json(layout.candidates_dir / f"{old['closeOutcome']['candidateId']}.json")
    assert candidate["seeds"][0]["text"] == "left behind"
    # b was written at T0 + window - 1s, so it is not stale yet.
    assert read_json(slate_file(layout, "b"))["closedAt"] is None


def test_a_write_keeps_a_slate_fresh_and_the_window_is_configurable(layout: StateLayout) -> None:
    ctx = ExternalContext.for_layout(layout, stale_after=timedelta(minutes=5))
    with clock.use(FixedClock(T0)):
        opened(ctx)
    with clock.use(FixedClock(T0 + timedelta(minutes=4))):
        seed(ctx, "still here")
    with clock.use(FixedClock(T0 + timedelta(minutes=8))):
        opened(ctx, "other")
    assert read_json(slate_file(layout, "a"))["closedAt"] is None
    with (
        clock.use(FixedClock(T0 + timedelta(minutes=10))),
        pytest.raises(OperationFailed, match="was closed"),
    ):
        seed(ctx, "too late")  # the sweep closed it first
    assert read_json(slate_file(layout, "a"))["closeOutcome"]["stale"] is True


def test_a_corrupt_slate_of_another_id_does_not_break_this_one(
    ctx: ExternalContext, layout: StateLayout
) -> None:
    opened(ctx, "broken")
    slate_file(layout, "broken").write_text("{")
    opened(ctx, "fine")
    seed(ctx, "ok", external_id="fine")
    with pytest.raises(CorruptStore):
        seed(ctx, "x", external_id="broken")
    assert slate_file(layout, "broken").read_text() == "{"


# ---- the CLI pipeline -------------------------------------------------------


def test_cli_open_write_close_proposals(run_cli, workspace: Path, layout: StateLayout) -> None:
    ws = ["-C", str(workspace)]
    opened_out = run_cli(main, ["open", *ws], '{"externalSessionId":"demo","anchors":{"root":"."}}')
    assert opened_out.exit_code == 0, opened_out.stderr
    assert json.loads(opened_out.stdout)["anchors"] == {"root": "."}
    wrote = run_cli(
        main, ["write-seed", *ws], '{"externalSessionId":"demo","text":"t","kind":"decision"}'
    )
    assert json.loads(wrote.stdout)["trust"] == "external-unverified"
    closed = run_cli(main, ["close", *ws], '{"externalSessionId":"demo"}')
    candidate = json.loads(closed.stdout)["outcome"]["candidateId"]
    listed = run_cli(main, ["proposals", "--json", *ws])
    rows = json.loads(listed.stdout)
    assert [(r["id"], r["kind"], r["trust"]) for r in rows] == [
        (candidate, "unbound-candidate", "external-unverified")
    ]
    text = run_cli(main, ["proposals", *ws]).stdout
    assert candidate in text and "origin=mcp-external/demo" in text
    bad = run_cli(main, ["open", "--stale-after", "0", *ws], '{"externalSessionId":"x"}')
    assert bad.exit_code == 2


def test_installed_script_serves_the_same_handlers(tool_path, workspace: Path) -> None:
    proc = subprocess.run(
        [tool_path("slate"), "open", "-C", str(workspace)],
        input='{"externalSessionId":"demo","anchors":{"root":"."}}',
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["externalSessionId"] == "demo"
