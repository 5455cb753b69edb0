"""libcommon.atomic: tmp + fsync + rename, seen from this process and from another."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
import pytest

from libcommon.atomic import atomic_write_bytes, atomic_write_json


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_write_bytes_creates_parents_and_content(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "er" / "doc.bin"
    atomic_write_bytes(target, b"\x00first\xff")
    assert target.read_bytes() == b"\x00first\xff"
    assert os.listdir(target.parent) == ["doc.bin"]


def test_write_bytes_replaces_content_and_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "doc.bin"
    for payload in (b"a" * 10_000, b"short", b""):
        atomic_write_bytes(target, payload)
        assert target.read_bytes() == payload
    assert os.listdir(tmp_path) == ["doc.bin"]


def test_write_bytes_replaces_inode_not_in_place(tmp_path: Path) -> None:
    target = tmp_path / "doc.bin"
    atomic_write_bytes(target, b"old")
    with target.open("rb") as old_reader:
        atomic_write_bytes(target, b"new")
        # An open reader keeps the complete old document: the file was renamed over.
        assert old_reader.read() == b"old"
    assert target.read_bytes() == b"new"


def test_mode_is_0600_whatever_the_umask(tmp_path: Path) -> None:
    target = tmp_path / "secret.json"
    target.write_text("{}")
    target.chmod(0o644)
    old = os.umask(0o000)
    try:
        atomic_write_json(target, {"k": 1})
    finally:
        os.umask(old)
    assert mode_of(target) == 0o600


def test_explicit_mode_is_applied(tmp_path: Path) -> None:
    target = tmp_path / "public.txt"
    atomic_write_bytes(target, b"x", mode=0o644)
    assert mode_of(target) == 0o644


def test_write_json_round_trips(tmp_path: Path) -> None:
    target = tmp_path / "doc.json"
    document = {"b": [1, 2.5, None, True], "a": {"nested": "ü"}, 3: "int key"}
    atomic_write_json(target, document)
    raw = target.read_bytes()
    assert raw.endswith(b"\n")
    assert orjson.loads(raw) == {"b": [1, 2.5, None, True], "a": {"nested": "ü"}, "3": "int key"}


def test_unserializable_json_keeps_old_file(tmp_path: Path) -> None:
    target = tmp_path / "doc.json"
    atomic_write_json(target, {"version": 1})
    before = target.read_bytes()
    with pytest.raises(TypeError):
        atomic_write_json(target, {"version": 2, "bad": object()})
    assert target.read_bytes() == before
    assert os.listdir(tmp_path) == ["doc.json"]


def test_failed_write_keeps_old_file_and_removes_temp(tmp_path: Path) -> None:
    target = tmp_path / "doc.bin"
    atomic_write_bytes(target, b"old")
    with pytest.raises(TypeError):
        atomic_write_bytes(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["doc.bin"]


def test_failed_rename_keeps_old_file_and_removes_temp(tmp_path: Path) -> None:
    # The target is a non-empty directory: os.replace fails after the temp file exists.
    target = tmp_path / "doc"
    target.mkdir()
    (target / "inside").write_text("keep")
    with pytest.raises(OSError):
        atomic_write_bytes(target, b"new")
    assert (target / "inside").read_text() == "keep"
    assert sorted(os.listdir(tmp_path)) == ["doc"]


def test_links_at_the_temporary_name_or_the_target_are_never_written_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import libcommon.atomic

    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    folder = tmp_path / "state"
    folder.mkdir()
    target = folder / "grants.json"
    target.write_bytes(b"old")
    # The temporary name is random; fixed here so a link can wait under it.
    monkeypatch.setattr(libcommon.atomic, "_tmp_token", lambda: "0" * 12)
    planted = folder / f".grants.json.{'0' * 12}.tmp"
    planted.symlink_to(victim)
    with pytest.raises(FileExistsError):
        atomic_write_bytes(target, b"new")
    assert victim.read_bytes() == b"keep"
    assert target.read_bytes() == b"old"
    assert planted.is_symlink()

    planted.unlink()
    target.unlink()
    target.symlink_to(victim)
    atomic_write_bytes(target, b"new")
    assert victim.read_bytes() == b"keep"
    assert not target.is_symlink() and target.read_bytes() == b"new"


READER = textwrap.dedent(
    """
    import sys, orjson
    from pathlib import Path
    target, stop = Path(sys.argv[1]), Path(sys.argv[2])
    reads = bad = 0
    print("ready", flush=True)
    while not stop.exists():
        data = target.read_bytes()
        reads += 1
        try:
            doc = orjson.loads(data)
            if len(doc["pad"]) != doc["size"]:
                bad += 1
        except Exception:
            bad += 1
    print(reads, bad, flush=True)
    """
)


def test_reader_in_another_process_never_sees_partial_document(tmp_path: Path) -> None:
    target = tmp_path / "doc.json"
    stop = tmp_path / "stop"
    atomic_write_json(target, {"n": -1, "size": 1, "pad": "x"})
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(target), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert reader.stdout is not None
        assert reader.stdout.readline().strip() == "ready"
        for n in range(300):
            size = 50_000 if n % 2 else 3  # alternate big and small documents
            atomic_write_json(target, {"n": n, "size": size, "pad": "y" * size})
        stop.touch()
        out, _ = reader.communicate(timeout=30)
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    reads, bad = (int(x) for x in out.split())
    assert reads > 0
    assert bad == 0, f"{bad} of {reads} reads saw a partial document"
    assert orjson.loads(target.read_bytes())["n"] == 299
    assert sorted(os.listdir(tmp_path)) == ["doc.json", "stop"]
