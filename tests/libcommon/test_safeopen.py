"""libcommon.safeopen: workspace writes that walk from the root and never follow a link."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from libcommon.errors import OperationFailed
from libcommon.locks import flock_lock
from libcommon.safeopen import (
    UnsafePath,
    create_bytes,
    open_for_reading,
    open_state_file,
    read_bytes,
    remove_empty_folder,
    write_bytes,
)


def test_write_makes_folders_keeps_modes_and_leaves_no_temp_files(tmp_path: Path) -> None:
    assert write_bytes(tmp_path, "a/b/new.txt", b"one", 0o640) is True
    target = tmp_path / "a" / "b" / "new.txt"
    assert target.read_bytes() == b"one"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    target.chmod(0o755)
    assert write_bytes(tmp_path, "a/b/new.txt", b"two", 0o640) is False
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    assert read_bytes(tmp_path, "a/b/new.txt", 10) == b"two"
    assert read_bytes(tmp_path, "a/b/none.txt", 10) is None
    assert read_bytes(tmp_path, "gone/none.txt", 10) is None
    assert os.listdir(target.parent) == ["new.txt"]


@pytest.mark.parametrize("link", ["a", "a/b", "a/b/f.txt"])
def test_a_link_anywhere_on_the_path_is_refused_for_every_operation(
    tmp_path: Path, link: str
) -> None:
    root = tmp_path / "ws"
    outside = tmp_path / "outside"
    (outside / "b").mkdir(parents=True)
    (outside / "b" / "f.txt").write_bytes(b"outside")
    (outside / "f.txt").write_bytes(b"outside")
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f.txt").write_bytes(b"inside")
    target = root / link
    if target.is_dir():
        os.rename(target, tmp_path / "moved")
    else:
        target.unlink()
    target.symlink_to(outside / ("f.txt" if link.endswith(".txt") else "b"))

    with pytest.raises(UnsafePath, match="symbolic link"):
        write_bytes(root, "a/b/f.txt", b"written", 0o644)
    with pytest.raises(UnsafePath, match="symbolic link"):
        read_bytes(root, "a/b/f.txt", 100)
    assert (outside / "b" / "f.txt").read_bytes() == b"outside"
    assert (outside / "f.txt").read_bytes() == b"outside"


@pytest.mark.parametrize("link", ["a", "a/b", "a/b/f.txt"])
def test_a_reader_refuses_a_link_anywhere_on_the_path(tmp_path: Path, link: str) -> None:
    root = tmp_path / "ws"
    outside = tmp_path / "outside"
    (outside / "b").mkdir(parents=True)
    (outside / "b" / "f.txt").write_bytes(b"outside")
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f.txt").write_bytes(b"inside")
    target = root / link
    if target.is_dir():
        os.rename(target, tmp_path / "moved")
    else:
        target.unlink()
    target.symlink_to(outside / ("b/f.txt" if link.endswith(".txt") else "b"))
    with (
        pytest.raises(UnsafePath, match="symbolic link") as caught,
        open_for_reading(root, "a/b/f.txt"),
    ):
        pass
    assert caught.value.hint is not None and "nothing was read" in caught.value.hint


def test_a_reader_opens_files_folders_and_protected_names(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_bytes(b"[core]\n")
    os.mkfifo(tmp_path / "fifo")
    with open_for_reading(tmp_path, ".git/config") as fd:
        assert fd is not None and os.read(fd, 100) == b"[core]\n"
    with open_for_reading(tmp_path, ".") as fd:
        assert fd is not None and sorted(os.listdir(fd)) == [".git", "fifo"]
    with open_for_reading(tmp_path, ".git") as fd:
        assert fd is not None and stat.S_ISDIR(os.fstat(fd).st_mode)
    with open_for_reading(tmp_path, "fifo") as fd:  # opened without blocking, not read
        assert fd is not None and stat.S_ISFIFO(os.fstat(fd).st_mode)
    with open_for_reading(tmp_path, "none/none") as fd:
        assert fd is None
    with pytest.raises(UnsafePath), open_for_reading(tmp_path, "../x"):
        pass


def test_the_refusal_names_the_file_and_the_link(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "x").symlink_to(".git")
    with pytest.raises(UnsafePath) as caught:
        write_bytes(tmp_path, "x/config", b"evil", 0o644)
    assert caught.value.message == "refused x/config: x is a symbolic link (to .git), not a folder"
    assert caught.value.status == 1
    assert list((tmp_path / ".git").iterdir()) == []


@pytest.mark.parametrize(
    "relative",
    [".git/config", "sub/.git/HEAD", ".ax/config.json", ".Git/config", "a/.AX", ".git"],
)
def test_protected_names_are_refused_anywhere(tmp_path: Path, relative: str) -> None:
    with pytest.raises(UnsafePath, match="folder, which ax never writes"):
        write_bytes(tmp_path, relative, b"x", 0o644)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("relative", ["", "/etc/passwd", "../x", "a/../b", "a//b", "./a", "a\0b"])
def test_paths_that_are_not_plain_relative_paths_are_refused(tmp_path: Path, relative: str) -> None:
    with pytest.raises(UnsafePath):
        write_bytes(tmp_path, relative, b"x", 0o644)


def test_folders_and_special_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(UnsafePath, match="is a directory"):
        write_bytes(tmp_path, "dir", b"x", 0o644)
    with pytest.raises(UnsafePath, match="not a regular file"):
        write_bytes(tmp_path, "fifo", b"x", 0o644)
    with pytest.raises(UnsafePath, match="not a regular file"):
        read_bytes(tmp_path, "fifo", 10)
    (tmp_path / "file").write_bytes(b"x")
    with pytest.raises(UnsafePath, match="file is not a folder"):
        write_bytes(tmp_path, "file/inner", b"x", 0o644)


def test_remove_empty_folder_never_follows_a_link(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_bytes(b"")
    target = tmp_path / "elsewhere" / "inner"
    target.mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "linked").symlink_to(target)
    assert remove_empty_folder(tmp_path, "empty") is True
    assert remove_empty_folder(tmp_path, "full") is False
    assert remove_empty_folder(tmp_path, "missing/inner") is False
    assert remove_empty_folder(tmp_path, "linked") is False
    with pytest.raises(UnsafePath, match="symbolic link"):
        remove_empty_folder(tmp_path, "link/inner")
    assert target.is_dir()


def test_a_state_file_that_is_a_link_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    link = tmp_path / "state.jsonl"
    link.symlink_to(victim)
    with pytest.raises(OperationFailed, match="is a symbolic link"):
        open_state_file(link, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    with pytest.raises(OperationFailed, match="is a symbolic link"), flock_lock(link):
        pass
    assert victim.read_bytes() == b"keep"
    fd = open_state_file(tmp_path / "plain", os.O_WRONLY | os.O_CREAT)
    os.close(fd)
    assert stat.S_IMODE((tmp_path / "plain").stat().st_mode) == 0o600


def test_create_makes_a_new_file_and_never_replaces_anything(tmp_path: Path) -> None:
    create_bytes(tmp_path, "a/new.md", b"one", 0o644)
    target = tmp_path / "a" / "new.md"
    assert target.read_bytes() == b"one" and stat.S_IMODE(target.stat().st_mode) == 0o644
    assert os.listdir(target.parent) == ["new.md"]
    with pytest.raises(UnsafePath, match="never replaces anything"):
        create_bytes(tmp_path, "a/new.md", b"two", 0o644)
    assert target.read_bytes() == b"one"
    # A dangling link, or a folder, under the name is kept and not written through.
    (tmp_path / "a" / "link.md").symlink_to(tmp_path / "elsewhere.md")
    (tmp_path / "a" / "dir.md").mkdir()
    for name in ("link.md", "dir.md"):
        with pytest.raises(UnsafePath, match="never replaces anything"):
            create_bytes(tmp_path, f"a/{name}", b"two", 0o644)
    assert not (tmp_path / "elsewhere.md").exists()
    assert sorted(os.listdir(target.parent)) == ["dir.md", "link.md", "new.md"]
    with pytest.raises(UnsafePath, match=r"inside a \.git folder"):
        create_bytes(tmp_path, ".git/AGENTS.md", b"x", 0o644)
