"""The runner (``ax-mesh run SEAT``): gives a seat its turns, each an ax-agent turn.

It holds the seat's execution lease (renewed on a thread of its own, with its own
connection), and loops: the scheduler step queues the seat's due automation runs,
``next_turn`` claims the next message or run under a delivery lease, and the turn runs
as one headless ``ax-agent`` process in the seat's own session (``--resume`` of the
session the seat's first turn started), its user message the envelope and the body on
stdin. The seat's token, lease generation and name go to that process alone, in its
environment (``AX_MESH_TOKEN``, ``AX_MESH_LEASE``, ``AX_MESH_SEAT``); the mesh's
location is the runner's own (``AX_STATE_DIR``, ``AX_MESH_DSN``).

Exit 0 of the turn completes the delivery; anything else puts it back with back-off.
A runner killed mid-turn completes nothing: the delivery lease runs out and the turn is
offered again (to the next runner, which must first wait out the dead one's execution
lease), and completing needs the lease, so a turn is never completed twice.

Between turns it waits: on PostgreSQL for a ``NOTIFY`` on the seat's channel (a hint;
the tables are the truth, so it also looks every ``LISTEN_FALLBACK_S``), on SQLite by
polling every ``POLL_INTERVAL_S``; never past the seat's next automation.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from libcommon import clock
from libcommon.errors import Fenced, OperationFailed, UsageError
from libcommon.redact import redact

from .automation_tools import schedule_due
from .delivery import Turn, fail_turn, finish_turn, next_turn
from .limits import DELIVERY_LEASE_S, EXECUTION_LEASE_S
from .mesh import (
    LEASE_VARIABLE,
    SEAT_VARIABLE,
    TOKEN_VARIABLE,
    Mesh,
    acquire_lease,
    epoch,
    open_mesh,
    read_token_file,
    renew_lease,
)
from .store import Actor

# SQLite has no wake-up signal: the runner looks for work this often.
POLL_INTERVAL_S = 0.25
# PostgreSQL's NOTIFY is only a hint: the runner also looks this often without one.
LISTEN_FALLBACK_S = 5.0
# While the store is unreachable (a PostgreSQL server restarting), the runner, its lease
# renewal and its LISTEN connection try again this often.
RECONNECT_INTERVAL_S = 1.0
# The part of the delivery lease a turn may take: the rest is room to complete it.
TURN_SHARE_OF_LEASE = 0.9
# After SIGTERM, how long an ax-agent turn has to abort cleanly before SIGKILL.
TURN_STOP_GRACE_S = 10.0
# What of a failed turn's stderr the delivery's last_error keeps.
TURN_ERROR_MAX_CHARS = 2000
# ax-agent exits that say the seat cannot take turns at all (bad usage, untrusted
# workspace): the runner stops instead of spending every message's attempts on them.
STOPPING_EXITS = (2, 3)


@dataclass
class RunnerOptions:
    seat: str
    workspace: Path
    agent_args: list[str] = field(default_factory=list)  # --provider, --model, …
    once: bool = False
    delivery_lease_s: float = DELIVERY_LEASE_S
    lease_ttl_s: float = EXECUTION_LEASE_S
    holder: str | None = None
    agent: str | None = None  # the ax-agent executable (default: beside this Python)


def agent_executable() -> str:
    beside = Path(sys.executable).parent / "ax-agent"
    if beside.exists():
        return str(beside)
    found = shutil.which("ax-agent")
    if found is None:
        raise UsageError("ax-agent is not installed beside ax-mesh (nor on PATH)")
    return found


class _Waiter:
    """Between turns: a NOTIFY on PostgreSQL, a short sleep on SQLite."""

    def __init__(self, environ: Mapping[str, str], seat: str, stop: threading.Event) -> None:
        self.stop = stop
        self.seat = seat
        self.conn: Any = None
        self.dsn = environ.get("AX_MESH_DSN") or None
        if self.dsn:
            self._listen()

    def wait(self, timeout: float) -> None:
        if self.dsn is None:
            self.stop.wait(min(POLL_INTERVAL_S, timeout))
            return
        import psycopg

        try:
            if self.conn is None or self.conn.closed or self.conn.broken:
                self._listen()
            # Short slices, so a stop request is seen soon even while listening.
            for _ in self.conn.notifies(timeout=min(LISTEN_FALLBACK_S, timeout), stop_after=1):
                pass
        except psycopg.OperationalError:
            # The server went away: the tables are the truth, so a missed NOTIFY costs at
            # most this wait; LISTEN again once it is back.
            self.close()
            self.stop.wait(min(RECONNECT_INTERVAL_S, timeout))

    def _listen(self) -> None:
        assert self.dsn is not None
        import psycopg
        from psycopg import sql

        from .pg_store import CONNECT_TIMEOUT_S, channel

        self.conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
        self.conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel(self.seat))))

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class Runner:
    def __init__(
        self,
        options: RunnerOptions,
        environ: Mapping[str, str],
        say: Callable[[dict[str, Any]], None],
    ) -> None:
        self.options = options
        self.environ = dict(environ)
        self.say = say
        self.stop = threading.Event()
        self.fenced = threading.Event()
        self.child: subprocess.Popen[bytes] | None = None
        self.child_lock = threading.Lock()
        self.actor: Actor | None = None
        self.unsettled: list[dict[str, Any]] = []

    # ---- the lease ----
    def _renew_loop(self, seat: str, generation: int) -> None:
        mesh = open_mesh(self.environ)
        try:
            interval = self.options.lease_ttl_s / 3
            while not self.stop.wait(interval):
                interval = self.options.lease_ttl_s / 3
                try:
                    renew_lease(mesh, seat, generation, self.options.lease_ttl_s)
                except Fenced as exc:
                    self.say({"event": "fenced", "seat": seat, "reason": exc.message})
                    self.fenced.set()
                    self.stop.set()
                    self._stop_child()
                    return
                except OperationFailed:
                    # The server is away: try again soon; once the lease has run out
                    # the renewal is fenced and the runner stops.
                    interval = min(RECONNECT_INTERVAL_S, interval)
        finally:
            mesh.close()

    def request_stop(self) -> None:
        """Stop after this turn; a turn in progress is aborted (SIGTERM) and put back."""
        self.stop.set()
        self._stop_child()

    def _stop_child(self) -> None:
        with self.child_lock:
            child = self.child
        if child is not None and child.poll() is None:
            child.send_signal(signal.SIGTERM)

    # ---- the loop ----
    def run(self) -> int:
        options = self.options
        if not options.workspace.is_dir():
            raise UsageError(f"the seat's workspace {options.workspace} is not a folder")
        mesh = open_mesh(self.environ)
        token = read_token_file(mesh.token_file(options.seat))
        holder = options.holder or f"{socket.gethostname()}:{os.getpid()}"
        lease = acquire_lease(mesh, options.seat, holder, options.lease_ttl_s)
        self.actor = Actor(options.seat, lease.generation)
        self.say({"event": "started", "seat": options.seat, "generation": lease.generation})
        self.unsettled = self._recover(mesh)
        renewer = threading.Thread(
            target=self._renew_loop, args=(options.seat, lease.generation), daemon=True
        )
        renewer.start()
        waiter = _Waiter(self.environ, options.seat, self.stop)
        status = 0
        away: str | None = None
        try:
            while not self.stop.is_set():
                try:
                    schedule_due(mesh.store, self.actor, epoch(), clock.timestamp())
                    turn = next_turn(mesh, options.seat, options.delivery_lease_s, self.unsettled)
                    due = None if turn is not None else mesh.store.next_due(options.seat)
                except OperationFailed as exc:
                    if away is None:
                        away = exc.message
                        self.say({"event": "store.unreachable", "error": away})
                    self.stop.wait(RECONNECT_INTERVAL_S)
                    continue
                if away is not None:
                    away = None
                    self.say({"event": "store.reachable", "seat": options.seat})
                if turn is not None:
                    status = self._turn(mesh, turn, token, lease.generation)
                    if status:
                        break
                    continue
                if options.once:
                    break
                waiter.wait(LISTEN_FALLBACK_S if due is None else max(0.0, due - epoch()))
        except Fenced:
            self.fenced.set()
        finally:
            self.stop.set()
            waiter.close()
            renewer.join()
            if not self.fenced.is_set():
                mesh.store.release_lease(self.actor)
            mesh.close()
        if self.fenced.is_set():
            raise Fenced(
                f"seat {options.seat!r}: this runner's execution lease was fenced",
                hint="another runner holds the seat now",
            )
        return status

    def _recover(self, mesh: Mesh) -> list[dict[str, Any]]:
        """Operations a dead runner of this seat left unsettled: settled by read-back where
        the service shows the effect, the rest kept for the next turn's envelope."""
        from .connection_tools import recover_seat

        assert self.actor is not None
        unsettled = recover_seat(mesh.store, self.actor, epoch(), clock.timestamp())
        if unsettled:
            self.say(
                {
                    "event": "operations.recovered",
                    "seat": self.options.seat,
                    "unsettled": [{"id": op["id"], "status": op["status"]} for op in unsettled],
                }
            )
        return unsettled

    def _command(self, session: str | None) -> list[str]:
        argv = [
            self.options.agent or agent_executable(),
            "--workspace",
            str(self.options.workspace),
            "--output-format",
            "json",
            *self.options.agent_args,
        ]
        return argv + (["--resume", session] if session else [])

    def _session_file(self, mesh: Mesh) -> Path:
        return mesh.root / "seats" / f"{self.options.seat}.session.json"

    def _session(self, mesh: Mesh) -> str | None:
        try:
            data = json.loads(self._session_file(mesh).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("workspace") != str(self.options.workspace):
            return None
        session = data.get("session")
        return session if isinstance(session, str) else None

    def _remember(self, mesh: Mesh, session: str) -> None:
        from libcommon.atomic import atomic_write_json

        atomic_write_json(
            self._session_file(mesh),
            {"workspace": str(self.options.workspace), "session": session},
        )

    def _turn(self, mesh: Mesh, turn: Turn, token: str, generation: int) -> int:
        env = {
            key: value
            for key, value in self.environ.items()
            if key not in (TOKEN_VARIABLE, LEASE_VARIABLE, SEAT_VARIABLE)
        }
        env.update(
            {
                TOKEN_VARIABLE: token,
                LEASE_VARIABLE: str(generation),
                SEAT_VARIABLE: self.options.seat,
            }
        )
        session = self._session(mesh)
        self.say(
            {
                "event": "turn.started",
                "seat": self.options.seat,
                "turn": turn.label,
                "kind": turn.envelope.kind,
                "attempt": turn.attempt,
                "ts": clock.timestamp(),
            }
        )
        child = subprocess.Popen(
            self._command(session),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        with self.child_lock:
            self.child = child
        try:
            out, err = child.communicate(
                turn.text.encode(), timeout=self.options.delivery_lease_s * TURN_SHARE_OF_LEASE
            )
            problem = None
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGTERM)
            try:
                out, err = child.communicate(timeout=TURN_STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                child.kill()
                out, err = child.communicate()
            problem = "the turn outlasted its delivery lease"
        finally:
            with self.child_lock:
                self.child = None
        summary = _summary(out)
        if isinstance(summary.get("session"), str):
            self._remember(mesh, summary["session"])
        report: dict[str, Any] = {
            "event": "turn.ended",
            "seat": self.options.seat,
            "turn": turn.label,
            "exit": child.returncode,
            "session": summary.get("session"),
        }
        if child.returncode == 0 and problem is None:
            if self._settle(lambda: finish_turn(mesh, turn), turn):
                self.say({**report, "outcome": "done"})
                self.unsettled = []  # a turn that ran to its end has seen them
            return 0
        error = problem or _error_text(summary, err, child.returncode)
        states: list[str] = []
        if not self._settle(lambda: states.append(fail_turn(mesh, turn, error)), turn):
            return 0
        state = states[0]
        self.say({**report, "outcome": "dead" if state == "dead" else "retry", "error": error})
        if self.fenced.is_set():
            raise Fenced(f"seat {self.options.seat!r}: the execution lease was fenced mid-turn")
        if child.returncode in STOPPING_EXITS:
            self.say({"event": "stopped", "seat": self.options.seat, "reason": error})
            return 1
        return 0

    def _settle(self, record: Callable[[], None], turn: Turn) -> bool:
        """Record a turn's outcome, trying again while the store is unreachable and the
        delivery lease lasts; past it the turn is offered again (never completed twice)."""
        leased = turn.message or turn.run
        lease = leased.lease_until if leased is not None else None
        while True:
            try:
                record()
                return True
            except OperationFailed as exc:
                if (lease is not None and epoch() >= float(lease)) or self.stop.is_set():
                    self.say({"event": "turn.unsettled", "turn": turn.label, "error": exc.message})
                    return False
                self.stop.wait(RECONNECT_INTERVAL_S)


def _summary(out: bytes) -> dict[str, Any]:
    try:
        data = json.loads(out.decode("utf-8", "replace"))
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _error_text(summary: dict[str, Any], err: bytes, code: int) -> str:
    result = summary.get("result") if summary.get("isError") else None
    tail = err.decode("utf-8", "replace").strip().splitlines()[-3:]
    text = f"ax-agent exited {code}: " + (str(result) if result else " | ".join(tail))
    text = redact(text)
    return text if len(text) <= TURN_ERROR_MAX_CHARS else text[: TURN_ERROR_MAX_CHARS - 1] + "…"
