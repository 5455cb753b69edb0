"""libcommon.trust: the read-only view of trust.json that ax-slate binds with."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from libcommon.errors import CorruptStore
from libcommon.trust import is_trusted, trusted_workspaces


def write_trust(state_dir: Path, *workspaces: Path) -> None:
    table = {
        str(ws): {"grantedAt": "2026-11-30T10:00:00.000Z", "source": "test"} for ws in workspaces
    }
    (state_dir / "trust.json").write_text(json.dumps({"version": 1, "workspaces": table}))


def test_missing_file_trusts_nothing(state_dir: Path, workspace: Path) -> None:
    assert is_trusted(state_dir, workspace) is False
    assert trusted_workspaces(state_dir) == []


def test_trusted_by_realpath(state_dir: Path, workspace: Path, tmp_path: Path) -> None:
    write_trust(state_dir, workspace)
    link = tmp_path / "link"
    link.symlink_to(workspace)
    assert is_trusted(state_dir, workspace)
    assert is_trusted(state_dir, link)  # the same folder through a symlink
    other = tmp_path / "other"
    other.mkdir()
    assert not is_trusted(state_dir, other)
    assert not is_trusted(state_dir, workspace / "sub")  # trust is per folder, not a prefix
    assert trusted_workspaces(state_dir) == [workspace]


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "[]",
        '{"version": 2, "workspaces": {}}',
        '{"version": 1, "workspaces": []}',
        '{"version": 1}',
    ],
)
def test_corrupt_file_raises(state_dir: Path, workspace: Path, content: str) -> None:
    (state_dir / "trust.json").write_text(content)
    with pytest.raises(CorruptStore) as caught:
        is_trusted(state_dir, workspace)
    assert "trust.json" in caught.value.message
    # The reader never rewrites the file.
    assert (state_dir / "trust.json").read_text() == content


def test_reader_writes_nothing(state_dir: Path, workspace: Path) -> None:
    before = sorted(os.listdir(state_dir))
    is_trusted(state_dir, workspace)
    assert sorted(os.listdir(state_dir)) == before
