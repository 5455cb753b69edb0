"""A preview's log is never written, appended to or truncated through a symbolic link."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from ax_preview.supervisor import Supervisor, _cap_log
from libcommon.errors import OperationFailed
from libcommon.paths import StateLayout


@pytest.fixture
def linked_log(tmp_path: Path) -> tuple[Path, Path]:
    victim = tmp_path / "elsewhere.txt"
    victim.write_bytes(b"x" * 100)
    log = tmp_path / "previews" / "p.log"
    log.parent.mkdir()
    log.symlink_to(victim)
    return log, victim


def test_the_log_cap_never_truncates_through_a_link(linked_log: tuple[Path, Path]) -> None:
    log, victim = linked_log
    with pytest.raises(OperationFailed, match="is a symbolic link"):
        _cap_log(log, 10)
    assert victim.read_bytes() == b"x" * 100


def test_a_note_is_dropped_rather_than_written_through_a_link(
    linked_log: tuple[Path, Path], tmp_path: Path
) -> None:
    log, victim = linked_log
    record = SimpleNamespace(log_path=str(log))
    supervisor = Supervisor(StateLayout(root=tmp_path, workspace=tmp_path), record)  # type: ignore[arg-type]
    supervisor.note("supervisor error, stopping the server")
    assert victim.read_bytes() == b"x" * 100
