"""Fixtures for the ax-policy tests: a small sample project to review commands in."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# A fixed PATH of system folders, so results do not depend on the caller's PATH.
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@pytest.fixture
def system_path() -> str:
    return SYSTEM_PATH


@pytest.fixture
def project(workspace: Path) -> Path:
    """A workspace with the files the corpora name, a secret, a planted executable, and
    names that reach outside it: a symlink, a hard link, folders holding them, a FIFO."""
    files = {
        "README.md": "# demo\nTODO: write docs\n",
        "src/app.py": "def main():\n    return 1  # TODO\n",
        "src/util.py": "import os\n",
        "docs/guide.md": "guide\n",
        "data.csv": "name,age\nada,36\n",
        "a.txt": "a\nb\n",
        "b.txt": "a\nc\n",
        "names.txt": "ada\nada\nbob\n",
        "log.txt": "one\ntwo\n",
        "package.json": '{"name": "demo", "scripts": {}}\n',
        ".env": "API_TOKEN=abc\n",
        "patterns.txt": "TODO\n",
        "cmp_b/README.md": "# other\n",
    }
    for name, text in files.items():
        target = workspace / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    planted = workspace / "bin" / "ls"
    planted.parent.mkdir()
    planted.write_text("#!/bin/sh\necho planted\n")
    planted.chmod(0o755)
    # A link that leads out of the workspace.
    (workspace / "escape").symlink_to("/etc")
    # A file outside the workspace, reached from inside by a hard link, by a link in
    # a folder diff compares, and by a link named like a flag (an operand under
    # POSIXLY_CORRECT).
    outside = workspace.parent / "outside-secret.txt"
    outside.write_text("OUTSIDE\n")
    os.link(outside, workspace / "hardlink.txt")
    (workspace / "linked").mkdir()
    os.link(outside, workspace / "linked" / "copy.txt")
    (workspace / "cmp_a").mkdir()
    (workspace / "cmp_a" / "README.md").symlink_to(outside)
    (workspace / "-v").symlink_to(outside)
    os.mkfifo(workspace / "pipe.fifo")
    return Path(os.path.realpath(workspace))
