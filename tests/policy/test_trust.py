"""Trust as other tools read it."""

from __future__ import annotations

from pathlib import Path


def test_libcommon_reader_agrees_with_the_store_ax_policy_writes(workspace: Path) -> None:
    """ax-slate reads trust through libcommon.trust; both sides must mean the same file."""
    from ax_policy import grant_trust, revoke_trust
    from libcommon.paths import state_layout
    from libcommon.trust import is_trusted, trusted_workspaces

    layout = state_layout(workspace)
    assert is_trusted(layout.root, workspace) is False
    grant_trust(layout)
    assert is_trusted(layout.root, workspace) is True
    assert trusted_workspaces(layout.root) == [workspace]
    revoke_trust(layout)
    assert is_trusted(layout.root, workspace) is False
