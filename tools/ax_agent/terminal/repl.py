"""The interactive loop: one session, one ``run_turn`` per line.

The terminal builds nothing of its own below the runtime: it starts the
session the headless path starts (same options, same start sequence), plugs
in its renderer as a listener and its menu as the approver, and hands every
line that is not a slash command to ``run_turn``. During a turn the keyboard
is quiet (no echo) but not discarded: what a person types waits for the next
prompt, even across a Ctrl+C. Ctrl+C during a turn aborts it through the
runtime's abort event (a running command's tree is killed by ax-exec); at the
prompt, Ctrl+C twice or Ctrl+D exits with a one-line summary. Those exits,
``/quit`` and ``/clear`` end the session cleanly (``narrative.finish``: the
journal entry first when it did real work); an error that escapes the loop
only ends it.
"""

from __future__ import annotations

import termios
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from libcommon.cliapp import Environment
from libcommon.errors import AxError

from ..approvals import AnnouncingApprover
from ..headless import abort_on_signals
from ..instructions import TruncationNotice
from ..loop import run_turn
from ..narrative import finish
from ..session import Session, StartOptions, start_session
from . import commands, sigils
from .approve import KeySource, MenuApprover, TypeAhead
from .keys import KeyReader, drain, echo_mode, raw_mode
from .prompt import History, LineReader
from .render import Renderer
from .screen import Screen
from .status import StatusLine, compact_count

# A second Ctrl+C at the prompt within this many seconds exits.
EXIT_CONFIRM_S = 3.0


@contextmanager
def quiet_keyboard(fd: int | None) -> Iterator[None]:
    """During a turn: no echo, and a Ctrl+C does not flush what was typed ahead."""
    if fd is None:
        yield
        return
    saved = termios.tcgetattr(fd)
    quiet = list(saved)
    # Not canonical either: every key (Ctrl+D too) waits as a byte for the next prompt.
    quiet[3] = (quiet[3] & ~(termios.ECHO | termios.ICANON)) | termios.NOFLSH
    quiet[6] = list(quiet[6])
    quiet[6][termios.VMIN] = 1
    quiet[6][termios.VTIME] = 0
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)


class Terminal:
    def __init__(self, options: StartOptions, environment: Environment) -> None:
        self.options = options
        self.environment = environment
        self.screen = Screen(
            environment.stdout,
            environment.stderr,
            out_tty=bool(environment.stdout_isatty),
            err_tty=bool(environment.stderr_isatty),
            environ=environment.environ,
        )
        self.status = StatusLine(self.screen)
        self.typeahead = TypeAhead()
        self.fd = _fileno(environment.stdin) if environment.stdin_isatty else None
        self.renderer = Renderer(self.screen, self.status)
        # The menu answers the model's approvals and asks the person's own confirmations
        # (/init); --dangerously-allow-all answers the former only.
        self.menu = MenuApprover(
            self.screen,
            self.status,
            self._keys() if self.screen.escapes else None,
            self._read_answer,
        )
        if not isinstance(options.approver, AnnouncingApprover):
            options.approver = self.menu
        options.listeners.append(self.renderer.on_event)
        options.listeners.append(
            TruncationNotice(lambda text: self.screen.line(self.screen.style(text, "yellow")))
        )
        options.on_text = self.renderer.on_text
        options.on_output = self.renderer.on_output
        # Contextual questions the person declined (in memory only: nothing is recorded).
        self.declined: set[str] = set()

    def _keys(self) -> KeySource | None:
        fd = self.fd
        if fd is None:
            return None
        typeahead = self.typeahead

        @contextmanager
        def open_keys() -> Iterator[Iterator[str]]:
            with raw_mode(fd):
                # Typed before the question appeared: kept for the prompt, never an answer.
                typeahead.add(drain(fd))
                yield iter(KeyReader(fd))

        return open_keys

    def _read_answer(self) -> str:
        """A typed answer (no raw keys): what was typed before the question is set aside."""
        if self.fd is None:
            return self.environment.stdin.readline()
        with raw_mode(self.fd):
            self.typeahead.add(drain(self.fd))
        with echo_mode(self.fd):
            return self.environment.stdin.readline()

    def run(self) -> int:
        session = self._start(self.options)
        reader = LineReader(
            self.screen,
            self.environment.stdin,
            History(session.layout.root),
            self.typeahead,
            use_readline=bool(self.environment.stdin_isatty and self.environment.stdout_isatty),
            complete=commands.complete,
        )
        reason = "error"
        clean = False
        last_interrupt: float | None = None
        try:
            while True:
                try:
                    line = reader.read()
                except EOFError:
                    self.screen.line()
                    reason = "end of input"
                    break
                except KeyboardInterrupt:
                    self.screen.line()
                    now = time.monotonic()
                    if last_interrupt is not None and now - last_interrupt <= EXIT_CONFIRM_S:
                        reason = "interrupted at the prompt"
                        break
                    last_interrupt = now
                    self.screen.line(self.screen.style("(Ctrl+C again to exit)", "dim"))
                    continue
                last_interrupt = None
                if not line.strip():
                    continue
                if commands.parse(line) is not None:
                    context = self._context(session)
                    try:
                        action = commands.run_line(context, line)
                    except KeyboardInterrupt:
                        self.screen.line("(command interrupted)")
                        continue
                    if action == "handoff" and context.successor is not None:
                        # Issue 26: the old session ends; the successor adopts its entry.
                        self._end(session, "handoff", clean=True)
                        session = self._start(
                            replace(self.options, resume=context.successor, continue_latest=False)
                        )
                        continue
                    if action == "recover":
                        self._turn(session, None, recover=True)
                        continue
                    if context.kickoff is not None:
                        self._turn(session, context.kickoff, kickoff=True)
                        continue
                    if action == "quit":
                        reason = "quit"
                        self._consent(session, at_quit=True)
                        break
                    if action == "clear":
                        self._end(session, "cleared", clean=True)
                        session = self._start(
                            replace(self.options, resume=None, continue_latest=False)
                        )
                    continue
                routed = sigils.route(line)
                if isinstance(routed, str):
                    self.screen.line(self.screen.style(f"ax-agent: {routed}", "red"))
                    continue
                self._turn(session, line if routed is None else routed.turn_text())
                # After the turn's finally (it ran inside _turn), never inside it.
                self._consent(session, at_quit=False)
            clean = True
        finally:
            reader.history.save()
            self._end(session, reason, clean=clean)
        return 0

    def _context(self, session: Session) -> commands.Context:
        return commands.Context(
            session, self.options, self.screen, self.renderer, self.menu.confirm
        )

    def _consent(self, session: Session, *, at_quit: bool) -> None:
        """At most one contextual question (``consent``), on a terminal only."""
        from ax_log import read_events

        from .consent import ask, offer

        if self.fd is None:
            return
        events = list(read_events(session.layout.session_log(session.id), session.id))
        found = offer(session.layout, session.id, events, at_quit=at_quit)
        if found is None or found.key in self.declined:
            return
        try:
            if not ask(self._context(session), found):
                self.declined.add(found.key)
        except KeyboardInterrupt:
            self.screen.line()
            self.declined.add(found.key)

    def _start(self, options: StartOptions) -> Session:
        from ..handoff.flow import adopt

        session = start_session(options)
        session.on_task_status = self.status.set_tasks
        self.renderer.last_step = session.trail_step
        self.renderer.steps.clear()
        resumed = " (resumed)" if session.resumed else ""
        sep = self.screen.glyphs.sep
        self.screen.line(
            self.screen.style(
                f"ax-agent{sep}session {session.id}{resumed}{sep}{session.provider.name}, "
                f"model {session.model}{sep}/help for commands",
                "dim",
            )
        )
        # Issue 26: a successor adopts its entry; its kickoff is claimed, then sent, once.
        kickoff = adopt(session, options, self._warn)
        if kickoff is not None:
            self._turn(session, kickoff, kickoff=True)
        return session

    def _warn(self, text: str) -> None:
        self.screen.line(self.screen.style(text, "yellow"))

    def _turn(
        self, session: Session, text: str | None, *, kickoff: bool = False, recover: bool = False
    ) -> None:
        """One turn; its outcome is on the screen already (the renderer drew the events).

        ``kickoff``: a handoff's kickoff, claimed before it is sent; ``recover``: the
        failover instruction of a new attempt.
        """
        from ..handoff import flow

        try:
            with quiet_keyboard(self.fd), abort_on_signals(session.asking.is_set) as abort:
                self.status.begin()
                try:
                    if recover:
                        flow.recover(session, abort)
                        self._note(flow.RECOVER_NOTE)
                    elif kickoff:
                        flow.deliver(session, text or "", abort)
                    else:
                        run_turn(session, text or "", abort)
                finally:
                    self.status.end()
                    self.screen.end_text()
        except AxError as exc:
            self.screen.line(self.screen.style(f"ax-agent: error: {exc.message}", "red"))

    def _end(self, session: Session, reason: str, *, clean: bool) -> None:
        """End the session; a clean end writes its journal entry first (Ctrl+C: the skeleton)."""
        from .cost import session_totals

        if clean:
            with quiet_keyboard(self.fd), abort_on_signals(session.asking.is_set) as abort:
                finish(session, reason, abort=abort, say=self._note)
        else:
            session.end(reason)
        totals = session_totals(session.layout, session.id)
        sep = self.screen.glyphs.sep
        self.screen.line(
            f"ax-agent: session {session.id} ended ({reason}){sep}{totals.turns} turns{sep}"
            f"{compact_count(totals.tokens)} tokens{sep}resume with: ax-agent --resume {session.id}"
        )

    def _note(self, text: str) -> None:
        self.screen.line(self.screen.style(text, "dim"))


def _fileno(stream: object) -> int | None:
    try:
        return int(stream.fileno())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return None


def run_terminal(options: StartOptions, environment: Environment) -> int:
    """``ax-agent`` with no prompt on a terminal: the interactive mode."""
    return Terminal(options, environment).run()
