"""The executors' group overhead on a generated repository (not collected).

    .venv/bin/python tests/bench/worktrees.py [--files N] [--runs N] [--tasks N] [--dir FOLDER]

On a committed git repository of ``--files`` files (2,500 by default) in folders of
50, with a few uncommitted changes (the base is the dirty tree), one run is one
group of ``--tasks`` executors (3 by default) and times each part ax owns:

- prepare: the group's task-base checkpoint, the worktree entries (one at a time,
  under the repository's lock) and their checkouts (side by side) under the state
  root, and the end-of-line check (every file of the first worktree and of the
  workspace hashed against the checkpoint's blobs);
- capture: per task, five changed files captured (``add -A``, ``status -z``, base blobs
  read back, base and after bytes stored), all tasks one after the other;
- release: every worktree parked as a spare of the project (``git worktree move`` into
  ``worktrees/spares/``, at most three) or removed (set aside and ``git worktree
  prune``d; then its files are deleted in the background, shown apart as
  ``deletion``, after the group).

Each run is three groups in a new state root: cold (the project's first: no spares,
every worktree a checkout from nothing), warm (the next: each task claims a spare the
cold group parked, ``reset --hard`` and ``clean -ffdxq`` bring it to the new base, a
few files changed in the workspace between the groups, and every file of each spare is
hashed against the base) and again (the spares claimed a second time: each one's
record, written when it was last proved, vouches for the files no one changed since,
so only the others are hashed). It prints the median and max of ``--runs`` for each
part and for the whole group overhead, each group beside the goal of issue 21 (group
overhead under 1 s), met or NOT MET, and exits 1 when one is not met. The same
group with its child sessions, and the parallel against sequential ratio, are
``tests/bench/delegate.py``'s. Wall time on a shared machine: the load average is
printed first and last, and several runs are worth comparing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ax_agent.tasks.worktrees import capture_task, prepare_group, release_group
from libcommon.paths import StateLayout

GOAL_GROUP_S = 1.0
GIT_IDENTITY = ["-c", "user.name=bench", "-c", "user.email=bench@example.com", "-c", "gc.auto=0"]


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *GIT_IDENTITY, "-C", str(repo), *args], check=True, capture_output=True)


def make_repo(root: Path, files: int) -> Path:
    repo = root / "repo"
    for n in range(files):
        path = repo / f"pkg{n // 50:03d}" / f"mod{n % 50:02d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# module {n}\n" + "".join(f"value_{i} = {n * i}\n" for i in range(20)))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "generated")
    # The parent's uncommitted work: every member starts from it.
    (repo / "pkg000" / "mod00.py").write_text("# changed, not committed\n")
    (repo / "notes.txt").write_text("untracked\n")
    return repo


def one_group(layout: StateLayout, run: int, tasks: int) -> dict[str, float]:
    ids = [f"t{n}" for n in range(tasks)]
    environ = dict(os.environ)
    start = time.perf_counter()
    base = prepare_group(layout, "bench", f"g{run}", ids, environ)
    prepared = time.perf_counter()
    try:
        for n, task in enumerate(ids):
            tree = base.workspace(task)
            for k in range(4):
                (tree / f"pkg{n + 1:03d}" / f"mod{k:02d}.py").write_text(f"# task {task}\n")
            (tree / f"new_{task}.py").write_text("print('new')\n")
            capture_task(base, task, lambda _event: None)
        captured = time.perf_counter()
    finally:
        release = release_group(base, lambda _event: None)
    released = time.perf_counter()
    # The set-aside worktrees' files are deleted in the background: waited for here (and
    # shown apart), so no run's deletion overlaps the next run's prepare.
    if release.deleting is not None:
        release.deleting.join()
    return {
        "prepare": prepared - start,
        "capture": captured - prepared,
        "release": released - captured,
        "group": released - start,
        "deletion": time.perf_counter() - released,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2500)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where the repository and state go")
    options = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}")
    runs: dict[str, list[dict[str, float]]] = {"cold": [], "warm": [], "again": []}
    with tempfile.TemporaryDirectory(prefix="ax-bench-worktrees-", dir=options.dir) as folder:
        root = Path(folder)
        repo = make_repo(root, options.files)
        for run in range(options.runs):
            layout = StateLayout(root=root / f"state{run}", workspace=repo)
            for group, way in enumerate(runs):
                if group:
                    # The parent's work goes on between the groups.
                    for k in range(5):
                        path = repo / "pkg000" / f"mod{k + 1:02d}.py"
                        path.write_text(f"# run {run}, group {group}\n")
                runs[way].append(one_group(layout, group, options.tasks))
    print(
        f"{options.files} files, {options.tasks} executors per group, {options.runs} runs "
        "(median / max, seconds):"
    )
    met = []
    for way, what in (
        ("cold", "no spares"),
        ("warm", "the cold group's worktrees reused, every file hashed"),
        ("again", "reused once more, only what changed hashed"),
    ):
        print(f"{way} ({what}):")
        for part in ("prepare", "capture", "release", "group", "deletion"):
            values = [one[part] for one in runs[way]]
            print(f"  {part:8s} {statistics.median(values):7.3f} / {max(values):7.3f}")
        median = statistics.median(one["group"] for one in runs[way])
        met.append(median < GOAL_GROUP_S)
        print(
            f"goal: group overhead, {way}, under {GOAL_GROUP_S:.1f} s: "
            f"{'met' if met[-1] else 'NOT MET'} ({median:.3f} s median)"
        )
    print("with child sessions, and parallel against sequential: tests/bench/delegate.py")
    print(f"load average at end: {os.getloadavg()}")
    return 0 if all(met) else 1


if __name__ == "__main__":
    sys.exit(main())
