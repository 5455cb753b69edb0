"""ax-mesh on both backends: compare-and-swap throughput and search latency.

- CAS: N processes (4, then 16) each increment one shared counter record 25 times
  through ``memory.write`` with ``expected_revision``, retrying on conflict. Reports
  successful writes a second, conflicts, and checks that no update was lost (the final
  value and revision equal the writes made).
- Search: 20,000 records (40 words from a common core of 29, 20 from 5,000 rarer ones),
  then the median and p95 of 200 ``memory.search`` queries of two rare words (goal:
  median under 5 ms) and of 200 of two words every record holds (the worst case).

- Delivery: a real runner (``ax-mesh run``, mesh-fake turns) waits for messages; the
  time from ``messages.send`` returning to the runner's ``turn.started`` line, over
  DELIVERIES sends (LISTEN/NOTIFY on PostgreSQL, polling on SQLite; goal under 200 ms),
  then the runner's resident memory after ``--idle-s`` seconds idle (default 60).

- Killed writers: KILL_MESSAGES messages to one seat, delivered by KILL_WORKERS processes
  at once (claim under a short delivery lease, a short "turn", complete), each of which
  SIGKILLs itself just before the COMMIT of KILL_RATE of its write transactions (claims
  and completions alike) and is replaced; then, per message, the completions the workers
  saw commit. Goal: every message completed exactly once (a duplicate or a lost message
  fails the bench).

``--part`` (repeatable: cas, search, killed, delivery) and ``--backend`` measure less.
PostgreSQL runs when ``AX_MESH_BENCH_DSN`` names an empty database (it is wiped);
otherwise only SQLite. Figures, not pass/fail, except a lost update or a message completed
twice or never, which fail (exit 1).
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

RECORDS = 20_000
RARE_WORDS = 5_000
QUERIES = 200
ROUNDS = 25
SEARCH_GOAL_MS = 5.0
WORDS = [
    "retry",
    "token",
    "deploy",
    "schema",
    "lease",
    "fence",
    "record",
    "search",
    "store",
    "message",
    "queue",
    "worker",
    "conflict",
    "revision",
    "archive",
    "publish",
    "ticket",
    "owner",
    "review",
    "evidence",
    "plan",
    "budget",
    "index",
    "latency",
    "backend",
    "cluster",
    "snapshot",
    "rollback",
    "migration",
]

WORKER = r"""
import json, os, sys
from ax_mesh import ToolError, authenticate, call_tool, open_mesh
token, generation, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
mesh = open_mesh(os.environ)
caller = authenticate(mesh, token, generation)
print("ready", flush=True)
sys.stdin.readline()
done = conflicts = 0
while done < rounds:
    now = call_tool(mesh, caller, "memory.read", {"store": "team", "path": "counter"})
    try:
        call_tool(mesh, caller, "memory.write", {"store": "team", "path": "counter",
                  "text": str(int(now["text"]) + 1), "expected_revision": now["revision"]})
        done += 1
    except ToolError:
        conflicts += 1
print(json.dumps({"done": done, "conflicts": conflicts}))
"""


def setup(env: dict[str, str]) -> tuple[object, str, int]:
    from ax_mesh import Manifest, acquire_lease, add_seat, open_mesh
    from libcommon import clock

    mesh = open_mesh(env)
    mesh.store.add_store("team", "shared", None, clock.timestamp())
    manifest = Manifest.model_validate({"stores": {"team": {"revise": True}}})
    _seat, token = add_seat(mesh, "bench", "bench", manifest)
    generation = acquire_lease(mesh, "bench", "bench", 3600).generation
    return mesh, token, generation


def cas(env: dict[str, str], token: str, generation: int, writers: int) -> tuple[float, int, bool]:
    from ax_mesh import authenticate, call_tool, open_mesh

    mesh = open_mesh(env)
    caller = authenticate(mesh, token, generation)
    path = "counter"
    try:
        start = call_tool(mesh, caller, "memory.read", {"store": "team", "path": path})
        base_value, base_revision = int(start["text"]), start["revision"]
    except Exception:
        call_tool(
            mesh,
            caller,
            "memory.write",
            {"store": "team", "path": path, "text": "0", "expected_revision": 0},
        )
        base_value, base_revision = 0, 1
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, token, str(generation), str(ROUNDS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(writers)
    ]
    # Timed from when every worker has started and authenticated, not from their starts.
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    began = time.perf_counter()
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    results = [json.loads(p.communicate()[0]) for p in procs]
    elapsed = time.perf_counter() - began
    done = sum(r["done"] for r in results)
    final = call_tool(mesh, caller, "memory.read", {"store": "team", "path": path})
    intact = (int(final["text"]) - base_value == done) and (
        final["revision"] - base_revision == done
    )
    mesh.close()
    return done / elapsed, sum(r["conflicts"] for r in results), intact


def search(env: dict[str, str], token: str, generation: int) -> tuple[float, float, float]:
    from ax_mesh import authenticate, call_tool, open_mesh
    from ax_mesh.mesh import epoch
    from ax_mesh.store import Actor, Change

    mesh = open_mesh(env)
    rng = random.Random(7)
    actor = Actor("bench", generation)
    began = time.perf_counter()
    rare = [f"w{n:04d}" for n in range(RARE_WORDS)]
    for i in range(RECORDS):
        words = [rng.choice(WORDS) for _ in range(40)] + rng.sample(rare, 20)
        text = " ".join(words) + f" unique{i}"
        mesh.store.mutate_record(
            actor,
            epoch(),
            "t",
            "team",
            f"notes/{i:05d}.md",
            lambda _c, text=text: Change(op="write", text=text),
        )
    load = time.perf_counter() - began
    caller = authenticate(mesh, token, generation)
    figures = []
    for pick in (lambda: " ".join(rng.sample(rare, 2)), lambda: " ".join(rng.sample(WORDS, 2))):
        timings = []
        for _ in range(QUERIES):
            query = pick()
            t0 = time.perf_counter()
            call_tool(mesh, caller, "memory.search", {"query": query, "max_results": 10})
            timings.append((time.perf_counter() - t0) * 1000)
        timings.sort()
        figures += [statistics.median(timings), timings[int(len(timings) * 0.95)]]
    mesh.close()
    return load, figures


DELIVERIES = 10
DELIVERY_GOAL_MS = 200.0


def delivery(env: dict[str, str], idle_s: float) -> tuple[float, float, int]:
    """(median ms, max ms, idle RSS KiB) of a real runner."""
    import queue
    import threading
    from pathlib import Path

    from ax_mesh import Manifest, acquire_lease, add_seat, authenticate, call_tool, open_mesh
    from ax_policy import grant_trust
    from libcommon.paths import state_layout

    mesh = open_mesh(env)
    add_seat(mesh, "rx", "bench", Manifest())
    _seat, token = add_seat(mesh, "tx", "bench", Manifest.model_validate({"message": ["rx"]}))
    caller = authenticate(mesh, token, acquire_lease(mesh, "tx", "bench", 3600).generation)
    workspace = Path(env["AX_STATE_DIR"]).parent / f"ws-{os.getpid()}-{time.time_ns()}"
    workspace.mkdir()
    grant_trust(state_layout(workspace, env))
    mesh_exe = str(Path(sys.executable).parent / "ax-mesh")
    proc = subprocess.Popen(
        [mesh_exe, "run", "rx", "-C", str(workspace), "--provider", "mesh-fake"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    lines: queue.Queue[tuple[float, dict[str, object]]] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            lines.put((time.perf_counter(), json.loads(raw)))

    threading.Thread(target=read, daemon=True).start()

    def until(event: str) -> float:
        while True:
            at, line = lines.get(timeout=120)
            if line.get("event") == event:
                return at

    try:
        until("started")
        timings = []
        for n in range(DELIVERIES):
            time.sleep(0.5)  # the runner is waiting again (LISTEN, or between polls)
            call_tool(mesh, caller, "messages.send", {"to": "rx", "body": f"/claim {n}"})
            sent = time.perf_counter()
            timings.append((until("turn.started") - sent) * 1000)
            until("turn.ended")
        time.sleep(idle_s)
        rss = next(
            int(line.split()[1])
            for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines()
            if line.startswith("VmRSS:")
        )
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        mesh.close()
    return statistics.median(timings), max(timings), rss


KILL_MESSAGES = 200
KILL_WORKERS = 4
KILL_RATE = 0.05
KILL_LEASE_S = 1.0

KILLER = r"""
import contextlib, os, random, signal, sys, time
from ax_mesh import open_mesh
from ax_mesh.delivery import finish_turn, next_turn
from ax_mesh.errors import ToolError
log_path, rate, lease_s = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
mesh = open_mesh(os.environ)
rng = random.Random()
plain = mesh.store.write

@contextlib.contextmanager
def write():
    with plain() as tx:
        yield tx
        # The transaction's statements ran; it has not committed yet.
        if rng.random() < rate:
            os.kill(os.getpid(), signal.SIGKILL)

mesh.store.write = write
log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
idle = 0
while idle < 20:
    turn = next_turn(mesh, "krx", lease_s)
    if turn is None:
        idle += 1
        time.sleep(0.05)
        continue
    idle = 0
    os.write(log, f"started {turn.label}\n".encode())
    time.sleep(rng.random() * 0.02)
    try:
        finish_turn(mesh, turn)
    except ToolError:
        os.write(log, f"refused {turn.label}\n".encode())
        continue
    os.write(log, f"completed {turn.label}\n".encode())
"""


def killed_writers(env: dict[str, str]) -> dict[str, int]:
    """Deliver KILL_MESSAGES through workers that die mid-transaction; count what happened."""
    from collections import Counter
    from pathlib import Path

    from ax_mesh import Manifest, acquire_lease, add_seat, authenticate, call_tool, open_mesh

    mesh = open_mesh(env)
    add_seat(mesh, "krx", "bench", Manifest())
    _seat, token = add_seat(mesh, "ktx", "bench", Manifest.model_validate({"message": ["krx"]}))
    caller = authenticate(mesh, token, acquire_lease(mesh, "ktx", "bench", 3600).generation)
    for n in range(KILL_MESSAGES):
        call_tool(
            mesh,
            caller,
            "messages.send",
            {"to": "krx", "body": f"m{n}", "conversation_id": f"c{n}"},
        )
    log = Path(env["AX_STATE_DIR"]) / "killed-writers.log"

    def spawn() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-c", KILLER, str(log), str(KILL_RATE), str(KILL_LEASE_S)], env=env
        )

    kills = 0
    workers = [spawn() for _ in range(KILL_WORKERS)]
    deadline = time.monotonic() + 600
    while workers and time.monotonic() < deadline:
        time.sleep(0.1)
        for proc in list(workers):
            code = proc.poll()
            if code is None:
                continue
            workers.remove(proc)
            if code == -9:
                kills += 1
                workers.append(spawn())
    for proc in workers:
        proc.kill()
        proc.wait()
    lines = [line.split() for line in log.read_text().splitlines()]
    completed = Counter(label for what, label in lines if what == "completed")
    started = Counter(label for what, label in lines if what == "started")
    with mesh.store.read() as tx:  # type: ignore[attr-defined]
        rows = tx.all("SELECT id, state FROM messages WHERE recipient = 'krx'")
    mesh.close()
    states = Counter(state for _id, state in rows)
    labels = {f"M-{message_id}" for message_id, _state in rows}
    return {
        "kills": kills,
        "done": states.get("done", 0),
        "not_done": KILL_MESSAGES - states.get("done", 0),
        "completed_once": sum(1 for label in labels if completed[label] == 1),
        "completed_twice_or_more": sum(1 for label in labels if completed[label] > 1),
        "never_completed": sum(1 for label in labels if completed[label] == 0),
        "redelivered": sum(1 for label in labels if started[label] > 1),
        "refused_completions": sum(1 for what, _ in lines if what == "refused"),
    }


PARTS = ("cas", "search", "delivery", "killed")


def run(label: str, env: dict[str, str], idle_s: float, parts: list[str]) -> bool:
    mesh, token, generation = setup(env)
    mesh.close()  # type: ignore[attr-defined]
    ok = True
    for writers in (4, 16) if "cas" in parts else ():
        rate, conflicts, intact = cas(env, token, generation, writers)
        ok &= intact
        print(
            f"{label}: CAS {writers:2d} writers: {rate:7.1f} writes/s, {conflicts} conflicts, "
            f"{'no lost update' if intact else 'LOST UPDATES'}"
        )
    if "search" in parts:
        search_figures(label, env, token, generation)
    if "killed" in parts:
        ok &= killed_figures(label, env)
    if "delivery" in parts:
        delivery_figures(label, env, idle_s)
    return ok


def search_figures(label: str, env: dict[str, str], token: str, generation: int) -> None:
    from ax_mesh.limits import SEARCH_RANK_MAX

    load, (median, p95, common_median, common_p95) = search(env, token, generation)
    print(f"{label}: {RECORDS} records written in {load:.1f} s")
    print(
        f"{label}: search, two rare words: median {median:.2f} ms, p95 {p95:.2f} ms "
        f"(goal: median < {SEARCH_GOAL_MS} ms)"
    )
    print(
        f"{label}: search, two words in every record: median {common_median:.2f} ms, "
        f"p95 {common_p95:.2f} ms (the bound: the {SEARCH_RANK_MAX} newest ranked)"
    )


def killed_figures(label: str, env: dict[str, str]) -> bool:
    counts = killed_writers(env)
    exact = (
        counts["completed_once"] == counts["done"] == KILL_MESSAGES
        and counts["completed_twice_or_more"] == 0
    )
    print(
        f"{label}: {KILL_MESSAGES} messages, {KILL_WORKERS} workers, {counts['kills']} SIGKILLed "
        f"mid-transaction: {counts['completed_once']} completed exactly once, "
        f"{counts['completed_twice_or_more']} more than once, {counts['never_completed']} never "
        f"({counts['redelivered']} redelivered after a kill, {counts['refused_completions']} "
        f"completions refused for a lost lease) "
        f"{'ZERO DUPLICATES' if exact else 'DUPLICATE OR LOST DELIVERIES'}"
    )
    return exact


def delivery_figures(label: str, env: dict[str, str], idle_s: float) -> None:
    median_ms, max_ms, rss = delivery(env, idle_s)
    print(
        f"{label}: delivery, send to turn.started over {DELIVERIES} sends: median "
        f"{median_ms:.0f} ms, max {max_ms:.0f} ms (goal: < {DELIVERY_GOAL_MS:.0f} ms)"
    )
    print(f"{label}: runner idle {idle_s:.0f} s: {rss / 1024:.1f} MiB resident")


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle-s", type=float, default=60.0, help="the runner's idle time")
    parser.add_argument(
        "--part", action="append", choices=PARTS, help="measure only this part (repeatable)"
    )
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), action="append")
    options = parser.parse_args()
    idle_s, parts = options.idle_s, options.part or list(PARTS)
    backends = options.backend or ["sqlite", "postgresql"]
    ok = True
    if "sqlite" in backends:
        with tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, "AX_STATE_DIR": tmp}
            env.pop("AX_MESH_DSN", None)
            ok &= run("sqlite", env, idle_s, parts)
    dsn = os.environ.get("AX_MESH_BENCH_DSN")
    if "postgresql" in backends and dsn:
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("DROP SCHEMA IF EXISTS public CASCADE")
            conn.execute("CREATE SCHEMA public")
        with tempfile.TemporaryDirectory() as tmp:
            pg_env = {**os.environ, "AX_STATE_DIR": tmp, "AX_MESH_DSN": dsn}
            ok &= run("postgresql", pg_env, idle_s, parts)
    elif "postgresql" in backends:
        print("postgresql: skipped (set AX_MESH_BENCH_DSN to an empty database to measure it)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
