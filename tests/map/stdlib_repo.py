"""A git repository made from a copy of this interpreter's standard library, and its queries.

The quality test and the benchmarks rank and retrieve over the real index of this
copy (``ax_map.build_index``), so what they measure is what a user of ax-map gets.
The copy leaves out ``site-packages`` (whatever happens to be installed) and
``__pycache__``; its files keep their modification times, and it is committed, so a
build sees a clean repository of about 2,450 files, some 1,800 of them Python.
"""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
from pathlib import Path

SKIPPED_FOLDERS = ("site-packages", "__pycache__")
GIT_IDENTITY = [
    *("-c", "user.email=ax@example.invalid", "-c", "user.name=ax tests"),
    *("-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"),
]
# Generous: the copy is a few tens of MiB and git hashes every file once.
GIT_TIMEOUT_S = 300


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def copy_stdlib_repo(dest: Path) -> Path:
    """``dest``: a new git repository holding a committed copy of the standard library."""
    shutil.copytree(
        stdlib_root(), dest, ignore=shutil.ignore_patterns(*SKIPPED_FOLDERS), symlinks=True
    )
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "stdlib"]):
        subprocess.run(
            ["git", *GIT_IDENTITY, "-C", str(dest), *args],
            check=True,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
        )
    return dest


def read_queries(path: Path) -> list[tuple[str, list[str]]]:
    """The labelled queries: ``query -> path[|path...]`` per line, ``#`` comments."""
    queries = []
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        query, _, expected = line.rpartition(" -> ")
        queries.append((query.strip(), expected.strip().split("|")))
    return queries
