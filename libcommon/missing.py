"""Which programs a command could not find, read from its output and its exit status.

One scanner for every tool that runs a project's own commands (ax-check's checks,
ax-preview's dev servers): a command that could not find a program is a missing
tool, not a failing project. The cure depends on the tool asking (ax-check's
``missing.py`` names one per unit), except where the message itself names it.

The output is read line by line for the messages that say a program was not
found, and a run is classified only when its exit status is the one that
message goes with, so a real failure is never turned into a blocker:

- the shells' own words (bash ``x: command not found``, dash/sh
  ``1: x: not found``, ash/busybox ``sh: x: not found``, zsh ``command not
  found: x``), make running a recipe line itself (``make: x: No such file or
  directory``) and ``env: 'x': No such file or directory`` (a script's
  ``#!/usr/bin/env x``), with exit status 127; or with make's exit 2 after
  ``make: *** [...] Error 127``; or with a runner's ``Command failed with exit
  code 127`` (pnpm, yarn) or ``failed on line N with exit code 127`` (just);
- tox: ``env: Exception running subprocess [Errno 2] No such file or
  directory: 'x'`` when the env's last reported command was ``x`` and exited 2;
- nox ``nox > Program x not found.`` (what ``session.run`` logs) with nox's
  exit status 1;
- a Python interpreter a tox env or nox session asks for and cannot find (tox
  ``env: failed with could not find python interpreter matching any of the
  specs python3.8``, nox ``nox > Session s-3.8 failed: Python interpreter 3.8
  not found``; ax-check tells both to fail rather than skip it), with exit
  status 1, named as the program (``python3.8``; ``py38`` is ``python3.8``);
- ``python: No module named x`` (``python -m x``) with exit status 1;
- rustup's proxy for a component that is not installed (exit 1), and cargo's
  ``no such command: `x``` (exit 101), whose cure names the component or the
  ``cargo-x`` package.

A program named by a path counts only inside an environment folder
(``.venv/bin/x``, ``venv/bin/x``, ``node_modules/.bin/x``): the environment is
not created yet. Any other path is the project's own file, and its absence
is the project's failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from libcommon.ansi import strip_ansi

MAX_MISSING_PROGRAMS = 8
SHELL_NOT_FOUND_EXIT = 127
MAKE_FAILED_EXIT = 2
TOX_COMMAND_NOT_FOUND_EXIT = 2
PYTHON_NO_MODULE_EXIT = 1
NOX_FAILED_EXIT = 1
INTERPRETER_MISSING_EXIT = 1
RUSTUP_EXIT = 1
CARGO_EXIT = 101

_PROGRAM = r"(?P<program>[^\s:'\"‘’`]+)"
_SHELL_LINES = (
    re.compile(rf"^[^:]+: (?:line \d+: )?{_PROGRAM}: command not found$"),
    re.compile(rf"^[^:]+: \d+: {_PROGRAM}: not found$"),
    re.compile(rf"^(?:\S*/)?(?:sh|ash|dash|bash|ksh|mksh|busybox): {_PROGRAM}: not found$"),
    re.compile(rf"^zsh:(?:\d+:)? command not found: {_PROGRAM}$"),
    re.compile(
        rf"^g?make(?:\[\d+\])?: {_PROGRAM}: (?:No such file or directory|Command not found)$"
    ),
    re.compile(rf"^(?:\S*/)?env: [‘'\"]?{_PROGRAM}[’'\"]?: No such file or directory$"),
)
_MAKE_127 = re.compile(r"^g?make(?:\[\d+\])?: \*\*\* \[.*\] Error 127$")
_RUNNER_127 = re.compile(
    r"(?:Command failed|failed on line \d+) with exit code 127\b"
    r"|^npm (?:ERR!|error) (?:errno|code) 127$"
)
_TOX_MISSING = re.compile(
    rf"^(?P<env>[\w.-]+): Exception running subprocess \[Errno 2\] "
    rf"No such file or directory: '{_PROGRAM}'$"
)
_TOX_EXIT = re.compile(r"^(?P<env>[\w.-]+): exit (?P<code>-?\d+) \(.*?\) .*?> (?P<command>.*)$")
_NOX_MISSING = re.compile(rf"^nox > Program {_PROGRAM} not found\.?$")
_TOX_NO_INTERPRETER = re.compile(
    r"^[\w.-]+: failed with could not find python interpreter "
    r"(?:matching any of the specs|with spec\(s\):) (?P<spec>[^\s,]+)"
)
_NOX_NO_INTERPRETER = re.compile(
    r"^nox > Session \S+ failed: Python interpreter (?P<spec>\S+?) not found\.?$"
)
_PYTHON_MODULE = re.compile(r"^\S*python[\d.]*: No module named (?P<program>[\w.]+)$")
_RUSTUP_COMPONENT = re.compile(
    r"^error: the '(?P<component>[\w-]+)' component which provides the command "
    r"'(?P<program>[\w-]+)' is not available for the '(?P<toolchain>[^']+)' toolchain"
)
_RUSTUP_OLD = re.compile(
    r"^error: '(?P<program>[\w-]+)' is not installed for the toolchain '(?P<toolchain>[^']+)'"
)
_RUSTUP_CURE = re.compile(r"^To install, run `(?P<cure>rustup component add [^`]+)`")
_CARGO_NO_SUCH = re.compile(r"^error: no such (?:sub)?command: `(?P<sub>[\w-]+)`")
_ENV_FOLDER = re.compile(
    r"(?:^|/)(?:(?P<venv>\.?venv|env)/bin|(?P<node>node_modules/\.bin))/(?P<tool>[^/]+)$"
)
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


def _interpreter(spec: str) -> str | None:
    """The program a tox/nox interpreter spec names: ``3.8``, ``py38`` -> ``python3.8``.

    A path, or a spec that is not a plain version or interpreter name, is not classified.
    """
    if re.fullmatch(r"\d+(?:\.\d+)*", spec):
        return f"python{spec}"
    factor = re.fullmatch(r"py(?P<major>\d)(?P<minor>\d+)?", spec)
    if factor is not None:
        minor = factor["minor"]
        return f"python{factor['major']}" + (f".{minor}" if minor else "")
    if re.fullmatch(r"(?:c?python|pypy)\d*(?:\.\d+)*", spec):
        return spec.removeprefix("c")
    return None


@dataclass(frozen=True)
class Missing:
    program: str
    # Found by which evidence (the exit status it needs is checked against this).
    via: str  # shell, tox, nox, interpreter, python, rustup, cargo
    # The environment folder a path pointed into (".venv", "node_modules/.bin", ...).
    env_folder: str | None = None
    cure: str | None = None


@dataclass
class MissingScanner:
    """Fed every output line; says afterwards which programs the command could not find."""

    found: list[Missing] = field(default_factory=list)
    make_127: bool = False
    runner_127: bool = False
    tox_last_exit: tuple[int, str] | None = None
    _rustup_pending: Missing | None = None

    def _add(self, missing: Missing) -> None:
        if len(self.found) < MAX_MISSING_PROGRAMS and missing not in self.found:
            self.found.append(missing)

    def _program(self, raw: str, via: str) -> None:
        if "/" in raw:
            match = _ENV_FOLDER.search(raw)
            if match is None:
                return
            self._add(Missing(match["tool"], via, env_folder=match["venv"] or match["node"]))
        elif _NAME.match(raw):
            self._add(Missing(raw, via))

    def line(self, raw: str) -> None:
        text = strip_ansi(raw).rstrip("\r\n")
        if self._rustup_pending is not None:
            pending, self._rustup_pending = self._rustup_pending, None
            told = _RUSTUP_CURE.match(text)
            self._add(Missing(pending.program, "rustup", cure=told["cure"] if told else None))
        for pattern in _SHELL_LINES:
            if match := pattern.match(text):
                self._program(match["program"], "shell")
                return
        if _MAKE_127.match(text):
            self.make_127 = True
        elif _RUNNER_127.search(text):
            self.runner_127 = True
        elif match := _TOX_MISSING.match(text):
            self._program(match["program"], "tox")
        elif match := _TOX_EXIT.match(text):
            self.tox_last_exit = (int(match["code"]), match["command"].split(" ", 1)[0])
        elif match := _NOX_MISSING.match(text):
            self._program(match["program"], "nox")
        elif match := _TOX_NO_INTERPRETER.match(text) or _NOX_NO_INTERPRETER.match(text):
            name = _interpreter(match["spec"])
            if name is not None:
                self._add(Missing(name, "interpreter"))
        elif match := _PYTHON_MODULE.match(text):
            self._add(Missing(match["program"].split(".", 1)[0], "python"))
        elif match := _RUSTUP_COMPONENT.match(text):
            cure = f"rustup component add {match['component']} --toolchain {match['toolchain']}"
            self._add(Missing(match["program"], "rustup", cure=cure))
        elif match := _RUSTUP_OLD.match(text):
            self._rustup_pending = Missing(match["program"], "rustup")
        elif match := _CARGO_NO_SUCH.match(text):
            program = f"cargo-{match['sub']}"
            self._add(Missing(program, "cargo", cure=f"cargo install {program}"))

    def finish(self) -> None:
        if self._rustup_pending is not None:
            self._add(self._rustup_pending)
            self._rustup_pending = None

    def explained(self, exit_code: int) -> list[Missing]:
        """The missing programs that account for this exit status (empty: a real failure)."""
        if exit_code == 0:
            return []
        shell_exit = (
            exit_code == SHELL_NOT_FOUND_EXIT
            or (exit_code == MAKE_FAILED_EXIT and self.make_127)
            or self.runner_127
        )
        tox = self.tox_last_exit
        accounted: list[Missing] = []
        for item in self.found:
            if (
                (item.via == "shell" and shell_exit)
                or (
                    item.via == "tox"
                    and tox is not None
                    and tox[0] == TOX_COMMAND_NOT_FOUND_EXIT
                    and tox[1].rsplit("/", 1)[-1] == item.program
                )
                or (item.via == "python" and exit_code == PYTHON_NO_MODULE_EXIT)
                or (item.via == "nox" and exit_code == NOX_FAILED_EXIT)
                or (item.via == "interpreter" and exit_code == INTERPRETER_MISSING_EXIT)
                or (item.via == "rustup" and exit_code == RUSTUP_EXIT)
                or (item.via == "cargo" and exit_code == CARGO_EXIT)
            ):
                accounted.append(item)
        return accounted
