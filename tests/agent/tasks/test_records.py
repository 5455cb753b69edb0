"""Spare records on real worktrees and real files: a spare verified once is hashed at its
next claim only where something changed; a file forged after its record is caught all
the same; a record vouches for nothing racy, foreign or damaged; records follow their
spares and the sweep removes the orphans."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from agent.tasks.recording import Recorder
from checkpointgit import git, make_repo, needs_git

from ax_agent.tasks import records, spares, worktrees
from ax_agent.tasks.records import Record, entries, record_path, take_record, write_record
from ax_agent.tasks.worktrees import prepare_group, release_group, sweep_orphans
from libcommon.paths import StateLayout

pytestmark = needs_git
ENV = dict(os.environ)
FILES = {"a.txt": "a\n", "src/b.txt": "base b\n", "src/deep/c.txt": "c\n"}


def _layout(workspace: Path, state_dir: Path) -> StateLayout:
    make_repo(workspace, FILES)
    return StateLayout(root=state_dir, workspace=workspace)


def _spare_folder(layout: StateLayout) -> Path:
    return spares.spares_folder(layout.project_dir)


class HashSpy:
    """Which paths ``_hash_files`` was asked to hash in each folder (the real function
    runs: this only watches)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.asked: dict[Path, list[str]] = {}
        real = worktrees._hash_files

        def spy(runner: Any, sides: Sequence[tuple[Path, Sequence[str]]], *rest: Any) -> Any:
            for folder, paths in sides:
                self.asked.setdefault(Path(folder), []).extend(paths)
            return real(runner, sides, *rest)

        monkeypatch.setattr(worktrees, "_hash_files", spy)


def _settle() -> None:
    """Past the file system's clock tick: a record vouches only for files older than it."""
    time.sleep(0.05)


def test_a_spare_verified_once_is_hashed_only_where_its_task_wrote(
    workspace: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout = _layout(workspace, state_dir)
    release_group(prepare_group(layout, "s1", "g1", ["t1"], ENV), Recorder())
    _settle()
    spy = HashSpy(monkeypatch)
    second = prepare_group(layout, "s1", "g2", ["t1"], ENV)
    tree = second.trees["t1"]
    # Its first claim: no record yet (a fresh checkout has none), every file hashed.
    assert sorted(spy.asked[tree]) == sorted(FILES)
    assert record_path(second.folder, "t1").is_file()
    (tree / "a.txt").write_text("the task's edit\n")
    release_group(second, Recorder())
    [parked] = spares.list_spares(_spare_folder(layout))[0]
    # The record went with the spare, and the sweep keeps it.
    assert record_path(_spare_folder(layout), parked.path.name).is_file()
    sweep_orphans(layout, ENV)
    assert record_path(_spare_folder(layout), parked.path.name).is_file()

    spy.asked.clear()
    recorder = Recorder()
    third = prepare_group(layout, "s1", "g3", ["t1"], ENV, recorder)
    try:
        assert third.reused and recorder.of("worktree.discarded") == []
        # Only the file the reset wrote back is hashed; the others are vouched for.
        assert spy.asked[third.trees["t1"]] == ["a.txt"]
        assert (third.trees["t1"] / "a.txt").read_text() == "a\n"
        # A record serves one claim: the spare's is gone, the task's is new.
        assert not record_path(_spare_folder(layout), parked.path.name).exists()
        assert record_path(third.folder, "t1").is_file()
    finally:
        release_group(third, Recorder())


def test_a_file_forged_after_its_record_is_caught(workspace: Path, state_dir: Path) -> None:
    """Same size, mtime put back, and git told to compare only those: the record still
    sees a new ctime, so the file is hashed and the spare discarded."""
    layout = _layout(workspace, state_dir)
    git(workspace, "config", "core.checkStat", "minimal")
    first = prepare_group(layout, "s1", "g1", ["t1"], ENV)
    # Long before the record, so neither git nor the record calls the entry racy.
    os.utime(first.trees["t1"] / "src" / "b.txt", (1_000_000_000, 1_000_000_000))
    git(first.trees["t1"], "update-index", "--refresh")
    release_group(first, Recorder())
    _settle()
    second = prepare_group(layout, "s1", "g2", ["t1"], ENV)
    forged = second.trees["t1"] / "src" / "b.txt"
    kept = os.stat(forged)
    forged.write_text("EVIL b\n")
    os.utime(forged, ns=(kept.st_atime_ns, kept.st_mtime_ns))
    assert git(second.trees["t1"], "status", "--porcelain") == ""  # git sees nothing
    release_group(second, Recorder())
    recorder = Recorder()
    third = prepare_group(layout, "s1", "g3", ["t1"], ENV, recorder)
    try:
        [said] = recorder.of("worktree.discarded")
        assert "src/b.txt" in said["reason"] and "differ from the base" in said["reason"]
        assert (third.trees["t1"] / "src" / "b.txt").read_text() == "base b\n"
    finally:
        release_group(third, Recorder())


def test_a_record_vouches_only_for_the_same_file_older_than_itself(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("x\n")
    found = worktrees._walk(tmp_path)
    info = found["f.txt"]
    assert info is not None
    ctime = info.st_ctime_ns
    now = entries(found, {"f.txt": "blob"})
    after = Record(files=now, taken_ns=ctime + 1)
    assert after.vouched(now, found) == {"f.txt"}
    # The base changed there: another blob is expected.
    assert after.vouched(entries(found, {"f.txt": "another blob"}), found) == set()
    # Racy: taken in the tick the file last changed in.
    assert Record(files=now, taken_ns=ctime).vouched(now, found) == set()
    (tmp_path / "f.txt").write_text("y\n")  # same size: a new ctime (and mtime)
    changed = worktrees._walk(tmp_path)
    assert after.vouched(entries(changed, {"f.txt": "blob"}), changed) == set()


def test_a_written_record_is_read_once(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "f.txt").write_text("x\n")
    (tree / "sub").mkdir()
    _settle()
    found = worktrees._walk(tree)
    now = entries(found, {"f.txt": "blob", "sub": "not a file", "gone.txt": "blob"})
    assert set(now) == {"f.txt"}  # only the regular files the walk saw
    where = tmp_path / ".stat-tree"
    write_record(where, now)
    assert where.stat().st_mode & 0o777 == 0o600  # the state root's, as its other files
    record = take_record(where)
    assert record is not None and not where.exists()
    assert record.files == now and record.vouched(now, found) == {"f.txt"}
    assert take_record(where) is None


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        json.dumps({"version": 99, "taken": 1, "files": {}}).encode(),
        json.dumps({"version": 1, "taken": "1", "files": {}}).encode(),
        json.dumps({"version": 1, "taken": 1, "files": []}).encode(),
        json.dumps({"version": 1, "taken": 1, "files": {"f": [1, 2, 3, 4, 5, 6, "b"]}}).encode(),
    ],
)
def test_a_damaged_record_vouches_for_nothing_and_goes(tmp_path: Path, body: bytes) -> None:
    where = tmp_path / ".stat-x"
    where.write_bytes(body)
    assert take_record(where) is None
    assert not where.exists()


def test_a_record_over_the_cap_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(records, "RECORD_MAX_BYTES", 64)
    where = tmp_path / ".stat-x"
    write_record(where, {"f": "b" * 100})
    assert not where.exists()  # too big to write
    where.write_bytes(json.dumps({"version": 1, "taken": 1, "files": {"f": "x" * 64}}).encode())
    assert take_record(where) is None


def test_a_link_in_place_of_a_record_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps({"version": 1, "taken": 1, "files": {}}))
    where = tmp_path / ".stat-x"
    where.symlink_to(target)
    assert take_record(where) is None
    assert target.exists()


def test_a_record_whose_spare_is_gone_is_swept(workspace: Path, state_dir: Path) -> None:
    layout = _layout(workspace, state_dir)
    folder = _spare_folder(layout)
    folder.mkdir(parents=True)
    orphan = record_path(folder, spares.new_name())
    orphan.write_text("{}")
    assert spares.list_spares(folder) == ([], [orphan])
    sweep_orphans(layout, ENV)
    assert not orphan.exists()
