"""The inventory: what git lists (or a walk finds), capped, each file classified unread."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from map.maptest import commit_all, git, make_repo, needs_git, write

from ax_map import inventory
from ax_map.inventory import take_inventory
from ax_map.model import FileEntry


def by_path(workspace: Path) -> dict[str, FileEntry]:
    return {entry.path: entry for entry in take_inventory(workspace, os.environ).files}


@needs_git
def test_git_lists_tracked_and_untracked_files_and_marks_uncommitted_ones(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    write(
        repo,
        {
            ".gitignore": "*.log\n",
            "clean.py": "x = 1\n",
            "edited.py": "x = 1\n",
            "gone.py": "x = 1\n",
            "old_name.py": "x = 1\n",
        },
    )
    commit_all(repo)
    write(repo, {"edited.py": "x = 2\n", "new.py": "y = 1\n", "staged.py": "z = 1\n", "a.log": ""})
    git(repo, "add", "staged.py")
    git(repo, "mv", "old_name.py", "new_name.py")
    (repo / "gone.py").unlink()
    found = by_path(repo)
    assert "a.log" not in found
    assert "old_name.py" not in found
    assert (found["clean.py"].tracked, found["clean.py"].changed) == (True, False)
    assert found["clean.py"].status == "pending"
    assert found["edited.py"].changed and found["edited.py"].tracked
    assert found["staged.py"].changed and found["staged.py"].tracked
    assert found["new_name.py"].changed
    assert (found["new.py"].tracked, found["new.py"].changed) == (False, True)
    assert (found["gone.py"].status, found["gone.py"].skip) == ("listed", "deleted")
    assert found["gone.py"].changed


@needs_git
def test_a_subfolder_workspace_lists_only_its_own_files(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, {"top.py": "", "pkg/inner.py": "", "pkg/sub/deep.py": ""})
    commit_all(repo)
    write(repo, {"pkg/inner.py": "changed = 1\n", "top.py": "changed = 1\n"})
    found = by_path(repo / "pkg")
    assert sorted(found) == ["inner.py", "sub/deep.py"]
    assert found["inner.py"].changed
    assert not found["sub/deep.py"].changed


@needs_git
def test_a_folder_its_repository_ignores_is_walked(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, {".gitignore": "scratch/\n", "scratch/a.py": "", "scratch/.gitignore": "*.tmp\n"})
    write(repo, {"scratch/b.tmp": ""})
    listed = take_inventory(repo / "scratch", os.environ)
    assert not listed.git
    assert sorted(e.path for e in listed.files) == [".gitignore", "a.py"]


@needs_git
def test_names_decide_what_is_never_read(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    write(
        repo,
        {
            ".env": "KEY=1\n",
            ".env.py": "def leaked(): pass\n",
            "config/credentials.json": "{}",
            ".ssh/config.py": "x = 1\n",
            # A secret folder deep down, beside and below folders that are not.
            "deep/ok.py": "x = 1\n",
            "deep/.AWS/keys/a.py": "x = 1\n",
            "deep/.AWS/b.py": "x = 1\n",
            "deep/keys/c.py": "x = 1\n",
            "server.pem": "",
            "logo.png": b"\x89PNG",
            "app.min.js": "var a=1;",
            "README.md": "# hi\n",
            "huge.py": "x = 1\n" * (inventory.MAX_FILE_BYTES // 6 + 1),
            "ok.py": "x = 1\n",
            "Makefile": "all:\n",
        },
    )
    (repo / "link.py").symlink_to(repo / "ok.py")
    found = by_path(repo)
    skips = {path: (entry.status, entry.skip) for path, entry in found.items()}
    assert skips == {
        ".env": ("listed", "secret-named"),
        ".env.py": ("listed", "secret-named"),
        "config/credentials.json": ("listed", "secret-named"),
        ".ssh/config.py": ("listed", "secret-named"),
        "deep/ok.py": ("pending", None),
        "deep/.AWS/keys/a.py": ("listed", "secret-named"),
        "deep/.AWS/b.py": ("listed", "secret-named"),
        "deep/keys/c.py": ("pending", None),
        "server.pem": ("listed", "secret-named"),
        "logo.png": ("listed", "binary"),
        "app.min.js": ("listed", "minified"),
        "README.md": ("listed", "no grammar"),
        "huge.py": ("listed", "too large"),
        "Makefile": ("listed", "no grammar"),
        "link.py": ("listed", "symlink"),
        "ok.py": ("pending", None),
    }
    assert found["README.md"].language == "markdown"
    assert found["Makefile"].language == "make"
    assert found["huge.py"].size > inventory.MAX_FILE_BYTES


def test_a_walk_never_follows_a_link_and_survives_loops(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, {"secret_source.py": "def outside(): pass\n"})
    ws = tmp_path / "ws"
    write(ws, {"a/real.py": "", "fifo_dir/.keep": ""})
    (ws / "a" / "loop").symlink_to(ws)
    (ws / "self").symlink_to(ws / "self")
    (ws / "out").symlink_to(outside)
    os.mkfifo(ws / "fifo_dir" / "pipe")
    listed = take_inventory(ws, os.environ)
    found = {entry.path: entry for entry in listed.files}
    assert not listed.git
    assert sorted(found) == [
        "a/loop",
        "a/real.py",
        "fifo_dir/.keep",
        "fifo_dir/pipe",
        "out",
        "self",
    ]
    assert {found[p].skip for p in ("a/loop", "self", "out")} == {"symlink"}
    assert found["fifo_dir/pipe"].skip == "not a regular file"


def test_the_cap_keeps_the_shallowest_files_and_counts_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inventory, "MAX_FILES", 5)
    write(tmp_path, {f"d{i}/e/f{i}.py": "" for i in range(10)})
    write(tmp_path, {"top1.py": "", "top2.py": "", "d0/mid.py": ""})
    listed = take_inventory(tmp_path, os.environ)
    assert (listed.total, listed.capped) == (13, 8)
    assert sorted(e.path for e in listed.files) == [
        "d0/e/f0.py",
        "d0/mid.py",
        "d1/e/f1.py",
        "top1.py",
        "top2.py",
    ]


def test_the_walk_stops_counting_at_its_entry_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inventory, "WALK_MAX_ENTRIES", 10)
    monkeypatch.setattr(inventory, "MAX_FILES", 4)
    write(tmp_path, {f"d{i}/f{j}.py": "" for i in range(5) for j in range(5)})
    listed = take_inventory(tmp_path, os.environ)
    assert not listed.exact
    assert listed.notes == ["the walk stopped counting after 10 entries"]
    assert listed.total >= 10
    assert len(listed.files) == 4


@needs_git
@pytest.mark.parametrize("git_repo", [True, False])
def test_undecodable_and_newline_names_are_kept_exactly(tmp_path: Path, git_repo: bool) -> None:
    ws = make_repo(tmp_path / "ws") if git_repo else tmp_path / "ws"
    names = [b"caf\xe9.py", b"new\nline.py", b'quo"te\\.py', "naïve.py".encode()]
    for name in names:
        (ws / os.fsdecode(name)).parent.mkdir(parents=True, exist_ok=True)
        with open(os.path.join(os.fsencode(ws), name), "wb") as handle:
            handle.write(b"def f(): pass\n")
    if git_repo:
        commit_all(ws)
    listed = take_inventory(ws, os.environ)
    assert listed.git is git_repo
    got = sorted(os.fsencode(entry.path) for entry in listed.files if entry.path != ".git")
    assert got == sorted(names)
    assert all(entry.status == "pending" for entry in listed.files)


@needs_git
def test_submodules_and_nested_repositories_are_listed_not_entered(tmp_path: Path) -> None:
    other = make_repo(tmp_path / "other")
    write(other, {"lib.py": "def lib(): pass\n"})
    commit_all(other)
    repo = make_repo(tmp_path / "repo")
    write(repo, {"main.py": ""})
    allow_local = ["-c", "protocol.file.allow=always"]
    git(repo, *allow_local, "submodule", "add", "-q", str(other), "vendor/lib")
    nested = make_repo(repo / "scratch")
    write(nested, {"inner.py": ""})
    found = by_path(repo)
    assert (found["vendor/lib"].status, found["vendor/lib"].skip) == ("listed", "submodule")
    assert (found["scratch"].status, found["scratch"].skip) == ("listed", "nested repository")
    assert not any(path.startswith(("vendor/lib/", "scratch/")) for path in found)
