"""Snapshots, recorded mutations and undo, on real files."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import orjson
import pytest

from ax_log import (
    load_object,
    object_path,
    read_events,
    record_mutations,
    snapshot_paths,
    undo,
)
from ax_log.cli import main
from libcommon.errors import OperationFailed, UsageError
from libcommon.paths import StateLayout


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def edit(
    layout: StateLayout, session: str, relative: str, data: bytes | None, call: str | None = None
) -> None:
    """What a typed file tool does: snapshot, change the file, record the mutation."""
    shots = snapshot_paths(layout, session, [relative], call)
    target = layout.workspace / relative
    if data is None:
        target.unlink()
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    record_mutations(layout, session, [relative], call, {relative: shots[0]})


def test_snapshots_are_content_addressed_and_deduplicated(layout: StateLayout) -> None:
    (layout.workspace / "a.txt").write_bytes(b"same")
    (layout.workspace / "b.txt").write_bytes(b"same")
    stored = snapshot_paths(layout, "s", ["a.txt", "b.txt", "missing.txt"], call_id="c1")
    assert [r["sha256"] for r in stored] == [sha(b"same"), sha(b"same"), None]
    assert [r["callId"] for r in stored] == ["c1"] * 3
    assert sorted(p.name for p in layout.objects_dir.iterdir()) == [sha(b"same")]
    assert load_object(layout, sha(b"same")) == b"same"
    assert object_path(layout, sha(b"same")).stat().st_mode & 0o777 == 0o400


def test_a_tampered_object_is_not_restored(layout: StateLayout) -> None:
    (layout.workspace / "a.txt").write_bytes(b"v1")
    edit(layout, "s", "a.txt", b"v2")
    blob = object_path(layout, sha(b"v1"))
    blob.chmod(0o600)
    blob.write_bytes(b"evil")
    outcome = undo(layout, "s", everything=True)
    assert not outcome.ok
    assert "does not match its hash" in outcome.event["refused"][0]["reason"]
    assert (layout.workspace / "a.txt").read_bytes() == b"v2"
    with pytest.raises(OperationFailed, match="missing"):
        load_object(layout, "0" * 64)


def test_undo_all_restores_original_bytes_removes_created_files_and_dirs(
    layout: StateLayout,
) -> None:
    ws = layout.workspace
    (ws / "keep.txt").write_bytes(b"original")
    (ws / "gone.txt").write_bytes(b"to be deleted")
    edit(layout, "s", "keep.txt", b"second", call="c1")
    edit(layout, "s", "keep.txt", b"third", call="c2")
    edit(layout, "s", "new/deep/file.txt", b"created", call="c3")
    edit(layout, "s", "gone.txt", None, call="c4")
    (ws / "keep.txt").chmod(0o640)
    outcome = undo(layout, "s", everything=True)
    assert outcome.ok
    assert (ws / "keep.txt").read_bytes() == b"original"
    assert (ws / "keep.txt").stat().st_mode & 0o777 == 0o640
    assert (ws / "gone.txt").read_bytes() == b"to be deleted"
    assert not (ws / "new").exists()
    mutations = [
        r["seq"] for r in read_events(layout.session_log("s"), "s") if r["type"] == "file.mutated"
    ]
    assert outcome.event["reverted"] == sorted(mutations, reverse=True)
    assert outcome.event["type"] == "undo.applied"
    assert set(outcome.event["paths"]) == {"keep.txt", "new/deep/file.txt", "gone.txt"}
    # Nothing left to undo: a second undo reverts nothing but is still recorded.
    again = undo(layout, "s", everything=True)
    assert again.event["reverted"] == [] and again.event["refused"] == []
    assert again.event["seq"] == outcome.event["seq"] + 1


def test_created_dir_that_gained_other_files_is_kept(layout: StateLayout) -> None:
    edit(layout, "s", "pkg/mod.py", b"x = 1\n")
    (layout.workspace / "pkg" / "user.txt").write_bytes(b"mine")
    assert undo(layout, "s", everything=False).ok
    assert not (layout.workspace / "pkg" / "mod.py").exists()
    assert (layout.workspace / "pkg" / "user.txt").read_bytes() == b"mine"


def test_undo_last_reverts_the_newest_call_only(layout: StateLayout) -> None:
    ws = layout.workspace
    (ws / "a").write_bytes(b"a0")
    (ws / "b").write_bytes(b"b0")
    edit(layout, "s", "a", b"a1", call="c1")
    shots = snapshot_paths(layout, "s", ["a", "b"], "c2")
    (ws / "a").write_bytes(b"a2")
    (ws / "b").write_bytes(b"b2")
    record_mutations(layout, "s", ["a", "b"], "c2", {r["path"]: r for r in shots})
    first = undo(layout, "s", everything=False)
    assert sorted(first.reverted_paths.values()) == ["a", "b"]
    assert ((ws / "a").read_bytes(), (ws / "b").read_bytes()) == (b"a1", b"b0")
    second = undo(layout, "s", everything=False)
    assert list(second.reverted_paths.values()) == ["a"]
    assert (ws / "a").read_bytes() == b"a0"


def test_drifted_file_is_refused_and_left_untouched(layout: StateLayout) -> None:
    ws = layout.workspace
    (ws / "a").write_bytes(b"v0")
    edit(layout, "s", "a", b"v1", call="c1")
    edit(layout, "s", "a", b"v2", call="c2")
    (ws / "b").write_bytes(b"b0")
    edit(layout, "s", "b", b"b1", call="c3")
    (ws / "a").write_bytes(b"someone else's edit")
    outcome = undo(layout, "s", everything=True)
    assert not outcome.ok
    assert (ws / "a").read_bytes() == b"someone else's edit"
    assert (ws / "b").read_bytes() == b"b0"
    refused = outcome.event["refused"]
    assert [r["path"] for r in refused] == ["a", "a"]
    assert refused[0]["reason"].startswith("drifted")
    assert "newer change" in refused[1]["reason"]
    assert list(outcome.reverted_paths.values()) == ["b"]


def test_the_log_is_only_appended_to(layout: StateLayout) -> None:
    (layout.workspace / "a").write_bytes(b"v0")
    edit(layout, "s", "a", b"v1")
    before = layout.session_log("s").read_bytes()
    undo(layout, "s", everything=True)
    after = layout.session_log("s").read_bytes()
    assert after.startswith(before)
    assert orjson.loads(after[len(before) :])["type"] == "undo.applied"


def test_paths_outside_the_workspace_are_refused(layout: StateLayout, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"secret")
    (layout.workspace / "link").symlink_to(outside)
    for raw in [str(outside), "../outside.txt", "link", "."]:
        with pytest.raises(UsageError, match="not a file inside the workspace"):
            snapshot_paths(layout, "s", [raw])
    (layout.workspace / "dir").mkdir()
    with pytest.raises(UsageError, match="is a directory"):
        snapshot_paths(layout, "s", ["dir"])
    os.mkfifo(layout.workspace / "fifo")
    with pytest.raises(UsageError, match="not a regular file"):
        snapshot_paths(layout, "s", ["fifo"])
    assert not layout.session_log("s").exists()


def test_cli_snapshot_mutated_undo(layout: StateLayout, run_cli) -> None:
    ws = str(layout.workspace)
    (layout.workspace / "f.txt").write_bytes(b"one")
    shot = run_cli(main, ["snapshot", "--session", "s", "--call", "c9", "-C", ws, "f.txt"])
    assert shot.exit_code == 0, shot.stderr
    assert orjson.loads(shot.stdout)["sha256"] == sha(b"one")
    (layout.workspace / "f.txt").write_bytes(b"two")
    mutated = run_cli(main, ["mutated", "--session", "s", "--call", "c9", "-C", ws, "f.txt"])
    record = orjson.loads(mutated.stdout)
    assert (record["pre"], record["post"], record["callId"]) == (sha(b"one"), sha(b"two"), "c9")

    both = run_cli(main, ["undo", "--session", "s", "--last", "--all", "-C", ws])
    assert both.exit_code == 2 and "exactly one" in both.stderr
    result = run_cli(main, ["undo", "--session", "s", "--last", "-C", ws])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"reverted  seq {record['seq']} f.txt\n"
    assert (layout.workspace / "f.txt").read_bytes() == b"one"


def test_cli_undo_exit_1_when_refused(layout: StateLayout, run_cli) -> None:
    (layout.workspace / "f").write_bytes(b"1")
    edit(layout, "s", "f", b"2")
    (layout.workspace / "f").write_bytes(b"3")
    result = run_cli(
        main, ["undo", "--session", "s", "--all", "--json", "-C", str(layout.workspace)]
    )
    assert result.exit_code == 1
    assert orjson.loads(result.stdout)["refused"][0]["path"] == "f"


def test_cli_mutated_without_snapshot_is_refused(layout: StateLayout, run_cli) -> None:
    (layout.workspace / "f").write_bytes(b"1")
    result = run_cli(main, ["mutated", "--session", "s", "-C", str(layout.workspace), "f"])
    assert result.exit_code == 2
    assert "no snapshot of f" in result.stderr
    assert not layout.session_log("s").exists()


def test_cli_undo_of_unknown_session(layout: StateLayout, run_cli) -> None:
    result = run_cli(main, ["undo", "--session", "nobody", "--all", "-C", str(layout.workspace)])
    assert result.exit_code == 1
    assert "no event log for session nobody" in result.stderr


def test_a_file_removed_with_its_folders_comes_back_with_them(layout: StateLayout) -> None:
    ws = layout.workspace
    (ws / "a" / "b").mkdir(parents=True)
    (ws / "a" / "b" / "f.txt").write_bytes(b"original")
    (ws / "a" / "b" / "f.txt").chmod(0o600)
    shots = snapshot_paths(layout, "s", ["a/b/f.txt"])
    (ws / "a" / "b" / "f.txt").unlink()
    (ws / "a" / "b").rmdir()
    (ws / "a").rmdir()
    record_mutations(layout, "s", ["a/b/f.txt"], None, {"a/b/f.txt": shots[0]})
    assert undo(layout, "s", everything=True).ok
    assert (ws / "a" / "b" / "f.txt").read_bytes() == b"original"
    assert (ws / "a" / "b" / "f.txt").stat().st_mode & 0o777 == 0o644
