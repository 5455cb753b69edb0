"""What protecting every .git and .ax costs a workspace-write command (not collected by pytest).

    .venv/bin/python tests/bench/exec_walk.py [FILES ...]

Before each workspace-write command the launcher walks the workspace for every
``.git`` and ``.ax`` (``launcher.find_protected``, capped at
``launcher.MAX_SCAN_ENTRIES`` entries). For a copy of this Python's standard
library and for generated trees of FILES empty files (default 50,000; 50 per
folder, 20 folders per level), it prints the walk's best-of-5 time and the
median wall time of ``run_managed(["true"], sandbox="workspace-write")`` there,
next to the same command in an empty workspace (or, over the cap, how long the
walk took to refuse).
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from ax_exec import ExecSpec, run_managed
from ax_exec.launcher import MAX_SCAN_ENTRIES, SetupError, find_protected

ROUNDS = 5


def generate(root: Path, files: int) -> None:
    made = 0
    for top in range(files // 1000 + 1):
        for middle in range(20):
            if made >= files:
                return
            folder = root / f"d{top}" / f"e{middle}"
            folder.mkdir(parents=True)
            for index in range(min(50, files - made)):
                (folder / f"f{index}.py").touch()
                made += 1


def entries(root: Path) -> int:
    return sum(len(dirs) + len(names) for _, dirs, names in os.walk(root))


def measure(label: str, root: Path) -> None:
    walks = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        try:
            find_protected(str(root), [".git", ".ax"])
        except SetupError:
            refused = time.perf_counter() - started
            print(f"{label:28} over the cap: refused after {refused * 1000:8.1f} ms")
            return
        walks.append(time.perf_counter() - started)
    spec = ExecSpec(argv=["true"], sandbox="workspace-write", workspace=str(root), cwd=str(root))
    runs = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        outcome = run_managed(spec)
        runs.append(time.perf_counter() - started)
        if not outcome.passed:
            print(f"{label}: workspace-write failed here: {outcome.error}")
            return
    count = entries(root)
    best = min(walks)
    per_entry = f"{best / count * 1e6:5.2f} µs/entry" if count else "   - µs/entry"
    print(
        f"{label:28} {count:9,} entries  walk {best * 1000:8.1f} ms ({per_entry})  "
        f"run_managed(['true']) median {statistics.median(runs) * 1000:8.1f} ms"
    )


def main(sizes: list[int]) -> None:
    print(f"launcher.MAX_SCAN_ENTRIES = {MAX_SCAN_ENTRIES:,}")
    with tempfile.TemporaryDirectory(prefix="ax-bench-walk-") as tmp:
        base = Path(tmp)
        empty = base / "empty"
        empty.mkdir()
        measure("empty workspace", empty)
        stdlib = base / "stdlib"
        shutil.copytree(sysconfig.get_paths()["stdlib"], stdlib, symlinks=True)
        measure("copy of the stdlib", stdlib)
        for files in sizes:
            tree = base / f"gen{files}"
            generate(tree, files)
            measure(f"generated, {files:,} files", tree)
            shutil.rmtree(tree)
    sys.stdout.flush()


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]] or [50_000])
