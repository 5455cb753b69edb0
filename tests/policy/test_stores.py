"""Trust, durable grants and configuration on real files in a private state root."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

import pytest

from ax_policy import (
    SessionGrants,
    add_durable_grant,
    check_trust,
    ensure_trusted,
    grant_trust,
    list_durable_grants,
    load_config,
    revoke_durable_grant,
    revoke_trust,
)
from libcommon import clock
from libcommon.errors import CorruptStore, NotTrusted, OperationFailed, UsageError
from libcommon.paths import state_layout

KEY = "0123456789abcdef" * 4


def log_lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# --- trust ---------------------------------------------------------------------------


def test_trust_grant_status_revoke(workspace: Path, state_dir: Path) -> None:
    layout = state_layout(workspace)
    assert not check_trust(layout).trusted
    status = grant_trust(layout)
    assert status.trusted and status.basis == "store" and status.granted_at
    assert check_trust(layout).trusted
    stored = json.loads((state_dir / "trust.json").read_text())
    assert str(workspace) in stored["workspaces"]
    assert grant_trust(layout).granted_at == status.granted_at  # idempotent
    assert revoke_trust(layout) is True
    assert revoke_trust(layout) is False
    assert not check_trust(layout).trusted
    actions = [entry["action"] for entry in log_lines(state_dir / "trust.log")]
    assert actions == ["grant", "revoke"]
    assert oct((state_dir / "trust.json").stat().st_mode & 0o777) == "0o600"


def test_trust_is_keyed_by_realpath(tmp_path: Path, workspace: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(workspace)
    grant_trust(state_layout(alias))
    assert check_trust(state_layout(workspace)).trusted
    sibling = tmp_path / "ws-evil"
    sibling.mkdir()
    assert not check_trust(state_layout(sibling)).trusted


def test_untrusted_non_interactive_refuses_with_exit_3(workspace: Path) -> None:
    layout = state_layout(workspace)
    with pytest.raises(NotTrusted) as refused:
        ensure_trusted(layout, interactive=False)
    assert refused.value.status == 3
    assert "ax-policy trust grant" in (refused.value.hint or "")
    # A prompt is never offered without a terminal.
    asked: list[str] = []

    def ask(question: str) -> bool:
        asked.append(question)
        return True

    with pytest.raises(NotTrusted):
        ensure_trusted(layout, interactive=False, ask=ask)
    assert asked == []


def test_trust_this_workspace_is_never_saved(workspace: Path, state_dir: Path) -> None:
    layout = state_layout(workspace)
    status = ensure_trusted(layout, interactive=False, trust_once=True)
    assert status.trusted and status.basis == "once"
    assert not (state_dir / "trust.json").exists()
    assert not check_trust(layout).trusted


def test_interactive_consent(workspace: Path) -> None:
    layout = state_layout(workspace)
    with pytest.raises(NotTrusted, match="declined"):
        ensure_trusted(layout, interactive=True, ask=lambda q: False)
    assert not check_trust(layout).trusted
    status = ensure_trusted(layout, interactive=True, ask=lambda q: str(workspace) in q)
    assert status.trusted and check_trust(layout).trusted


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"[]",
        b'{"version": 2, "workspaces": {}}',
        b'{"version": 1, "workspaces": {"/x": {"grantedAt": "t"}}}',
        b'{"version": 1, "workspaces": {}, "extra": true}',
    ],
)
def test_corrupt_trust_store_is_a_hard_error(
    workspace: Path, state_dir: Path, content: bytes
) -> None:
    (state_dir / "trust.json").write_bytes(content)
    layout = state_layout(workspace)
    with pytest.raises(CorruptStore):
        check_trust(layout)
    with pytest.raises(CorruptStore):
        grant_trust(layout)
    assert (state_dir / "trust.json").read_bytes() == content
    assert not (state_dir / "trust.log").exists()


def test_trust_store_that_is_a_fifo_is_refused(workspace: Path, state_dir: Path) -> None:
    os.mkfifo(state_dir / "trust.json")
    with pytest.raises(CorruptStore, match="not a regular file"):
        check_trust(state_layout(workspace))


def test_state_root_inside_workspace_is_refused(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AX_STATE_DIR", str(workspace / ".state"))
    with pytest.raises(UsageError, match="inside the workspace"):
        state_layout(workspace)


def test_concurrent_grants_are_not_lost(tmp_path: Path) -> None:
    folders = []
    for index in range(8):
        folder = tmp_path / f"w{index}"
        folder.mkdir()
        folders.append(folder)
    threads = [threading.Thread(target=grant_trust, args=(state_layout(f),)) for f in folders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(check_trust(state_layout(folder)).trusted for folder in folders)


# --- grants --------------------------------------------------------------------------


def test_session_grants_only_for_grantable_classes() -> None:
    grants = SessionGrants()
    grants.add("read_file", "sensitive")
    assert grants.holds("read_file", "sensitive")
    assert not grants.holds("read_file", "external")
    for bad in ("command", "reversible", "destructive", "observe"):
        with pytest.raises(UsageError, match="cannot be granted"):
            grants.add("run_command", bad)
    assert [g.to_json() for g in grants.entries()] == [{"tool": "read_file", "class": "sensitive"}]


def test_durable_grants_add_list_revoke(workspace: Path, state_dir: Path) -> None:
    with clock.use(ids=clock.SequentialIds()):
        first = add_durable_grant(state_dir, workspace, replay_key=KEY)
        again = add_durable_grant(state_dir, workspace, replay_key=KEY)
        second = add_durable_grant(state_dir, workspace, tool="web_search")
    assert first.id == "g-0001" and again.id == first.id and second.id == "g-0003"
    assert [g.id for g in list_durable_grants(state_dir, workspace)] == ["g-0001", "g-0003"]
    assert list_durable_grants(state_dir, workspace.parent) == []
    revoked = revoke_durable_grant(state_dir, "g-0001")
    assert revoked.replay_key == KEY
    assert [g.id for g in list_durable_grants(state_dir)] == ["g-0003"]
    with pytest.raises(OperationFailed, match="no durable grant"):
        revoke_durable_grant(state_dir, "g-0001")
    actions = [entry["action"] for entry in log_lines(state_dir / "grants.log")]
    assert actions == ["grant", "grant", "revoke"]


@pytest.mark.parametrize("log_name", ["trust.log", "grants.log"])
def test_an_audit_log_replaced_by_a_link_refuses_the_change(
    tmp_path: Path, workspace: Path, state_dir: Path, log_name: str
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched\n")
    (state_dir / log_name).symlink_to(victim)
    with pytest.raises(OperationFailed, match="symbolic link"):
        if log_name == "trust.log":
            grant_trust(state_layout(workspace))
        else:
            add_durable_grant(state_dir, workspace, replay_key=KEY)
    # Nothing reached the link's target, and no consent was recorded without its log line.
    assert victim.read_text() == "untouched\n"
    assert not check_trust(state_layout(workspace)).trusted
    assert list_durable_grants(state_dir) == []


@pytest.mark.parametrize(
    "kwargs",
    [
        {"tool": "run_command"},
        {"tool": "web_*"},
        {"replay_key": "abc"},
        {"replay_key": KEY.upper()},
        {},
        {"replay_key": KEY, "tool": "web_search"},
    ],
)
def test_durable_grants_are_exact_identities(
    workspace: Path, state_dir: Path, kwargs: dict[str, str]
) -> None:
    with pytest.raises(UsageError):
        add_durable_grant(state_dir, workspace, **kwargs)
    assert not (state_dir / "grants.json").exists()


def test_corrupt_grants_store(workspace: Path, state_dir: Path) -> None:
    bad = {
        "version": 1,
        "grants": [
            {
                "id": "g-1",
                "kind": "external-tool",
                "workspace": "/w",
                "tool": "run_command",
                "createdAt": "t",
            }
        ],
    }
    (state_dir / "grants.json").write_text(json.dumps(bad))
    with pytest.raises(CorruptStore, match="not eligible"):
        list_durable_grants(state_dir)
    with pytest.raises(CorruptStore):
        add_durable_grant(state_dir, workspace, tool="web_search")


# --- configuration -------------------------------------------------------------------


def write_json(path: Path, value: object) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(value).encode()
    path.write_bytes(data)
    return data


def test_config_absent_layers(workspace: Path) -> None:
    config = load_config(state_layout(workspace))
    assert config.protected_paths == [] and config.provider is None
    assert [(s.layer, s.present, s.sha256) for s in config.sources] == [
        ("user", False, None),
        ("workspace", False, None),
    ]


def test_config_layers_merge_narrowing_only(workspace: Path, state_dir: Path) -> None:
    user = write_json(
        state_dir / "config.json",
        {
            "provider": "anthropic",
            "maxSteps": 40,
            "protectedPaths": ["secrets"],
            "blockedHosts": ["a.example"],
        },
    )
    ws = write_json(
        workspace / ".ax" / "config.json",
        {"protectedPaths": ["migrations", "secrets"], "secretPatterns": ["*.sqlite"]},
    )
    config = load_config(state_layout(workspace))
    assert config.provider == "anthropic" and config.max_steps == 40
    assert config.protected_paths == ["secrets", "migrations"]
    assert config.secret_patterns == ["*.sqlite"]
    assert config.blocked_hosts == ["a.example"]
    assert [s.sha256 for s in config.sources] == [
        hashlib.sha256(user).hexdigest(),
        hashlib.sha256(ws).hexdigest(),
    ]


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ({"provider": "x"}, "'provider': unknown field"),
        ({"allowedPaths": ["/"]}, "'allowedPaths': unknown field"),
        ({"protectedPaths": "src"}, "protectedPaths"),
        ({"protectedPaths": ["a\x00b"]}, "control characters"),
        ({"protectedPaths": ["x" * 300]}, "protectedPaths"),
        ({"protectedPaths": ["p"] * 300}, "protectedPaths"),
        ([], "must be a JSON object"),
    ],
)
def test_workspace_layer_refuses_widening_and_bad_values(
    workspace: Path, content: object, needle: str
) -> None:
    write_json(workspace / ".ax" / "config.json", content)
    with pytest.raises(UsageError) as refused:
        load_config(state_layout(workspace))
    assert needle in refused.value.message
    assert str(workspace / ".ax" / "config.json") in refused.value.message


def test_user_layer_bad_json_and_bad_types(workspace: Path, state_dir: Path) -> None:
    (state_dir / "config.json").write_text("{oops")
    with pytest.raises(UsageError, match="not valid JSON"):
        load_config(state_layout(workspace))
    write_json(state_dir / "config.json", {"maxSteps": 0})
    with pytest.raises(UsageError, match="maxSteps"):
        load_config(state_layout(workspace))
    write_json(state_dir / "config.json", {"modle": "x"})
    with pytest.raises(UsageError, match="'modle': unknown field"):
        load_config(state_layout(workspace))


def test_oversized_config_is_refused(workspace: Path) -> None:
    from ax_policy.config import MAX_CONFIG_BYTES

    path = workspace / ".ax" / "config.json"
    path.parent.mkdir()
    path.write_text('{"protectedPaths": []}' + " " * MAX_CONFIG_BYTES)
    with pytest.raises(UsageError, match="larger than"):
        load_config(state_layout(workspace))


def test_workspace_config_symlinked_outside_is_refused(tmp_path: Path, workspace: Path) -> None:
    outside = tmp_path / "elsewhere.json"
    outside.write_text("{}")
    (workspace / ".ax").mkdir()
    (workspace / ".ax" / "config.json").symlink_to(outside)
    with pytest.raises(UsageError, match="leads outside the workspace"):
        load_config(state_layout(workspace))
