"""Real processes at once: compare-and-swap loses no update, a writer killed mid-transaction
leaves nothing behind, and appends never overwrite each other (both backends)."""

from __future__ import annotations

import json
import subprocess
import sys

from mesh.meshtest import Harness

WORKER = r"""
import json, os, signal, sys
from ax_mesh import ToolError, authenticate, call_tool, open_mesh
from ax_mesh.store import Change

mode, token, generation, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
mesh = open_mesh(os.environ)
caller = authenticate(mesh, token, generation)
if mode == "kill":
    def change(current):
        # Inside the write transaction, after the read: die before the commit.
        os.kill(os.getpid(), signal.SIGKILL)
        return Change(op="write", text="torn")
    from ax_mesh.mesh import epoch
    mesh.store.mutate_record(caller.actor, epoch(), "t", "team", "counter", change)
done = conflicts = 0
while done < rounds:
    if mode == "append":
        call_tool(mesh, caller, "memory.append",
                  {"store": "team", "path": "log", "text": f"{os.getpid()}-{done}"})
        done += 1
        continue
    now = call_tool(mesh, caller, "memory.read", {"store": "team", "path": "counter"})
    try:
        call_tool(mesh, caller, "memory.write", {"store": "team", "path": "counter",
                  "text": str(int(now["text"]) + 1), "expected_revision": now["revision"]})
        done += 1
    except ToolError as exc:
        assert exc.code == "conflict", exc.to_json()
        conflicts += 1
print(json.dumps({"done": done, "conflicts": conflicts}))
"""


def _spawn(
    mesh: Harness, mode: str, token: str, generation: int, rounds: int
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, mode, token, str(generation), str(rounds)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=mesh.environ,
    )


def test_no_lost_update_and_a_killed_writer_leaves_nothing(mesh: Harness) -> None:
    a = mesh.seat("a", revise=("team",))
    a.call("memory.write", store="team", path="counter", text="0", expected_revision=0)
    killed = _spawn(mesh, "kill", a.token, a.generation, 0)
    assert killed.wait(timeout=60) == -9, killed.stderr.read() if killed.stderr else ""
    workers = [_spawn(mesh, "cas", a.token, a.generation, 15) for _ in range(4)]
    results = []
    for worker in workers:
        out, err = worker.communicate(timeout=240)
        assert worker.returncode == 0, err[-2000:]
        results.append(json.loads(out))
    total = sum(r["done"] for r in results)
    assert total == 60
    final = a.call("memory.read", store="team", path="counter")
    assert (final["text"], final["revision"]) == ("60", 61)
    history = a.call("memory.history", locator="team/counter", max_results=100)
    assert len(history["revisions"]) == 61
    assert all(r["op"] == "write" for r in history["revisions"])


def test_concurrent_appends_never_overwrite_each_other(mesh: Harness) -> None:
    a = mesh.seat("a", write=("team",))
    workers = [_spawn(mesh, "append", a.token, a.generation, 10) for _ in range(4)]
    for worker in workers:
        _out, err = worker.communicate(timeout=240)
        assert worker.returncode == 0, err[-2000:]
    lines = a.call("memory.read", store="team", path="log")["text"].splitlines()
    assert len(lines) == 40 and len(set(lines)) == 40
