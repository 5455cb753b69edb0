"""Command review: a positive proof that a shell command only reads, or "ask".

``review_command`` answers ``read-only`` only when every one of these holds:
the string is one simple command, or a sequence of them joined only by
``| && || ;``, with nothing a shell would expand (``shellwords``); and every
command of it is proven: it does not start with an assignment; its executable
is a bare name on the curated allowlist (``allowlist``) that PATH resolves to
a real file under a system directory and not inside the workspace; every flag
is on that executable's own allowlist; and every path argument resolves inside
the workspace and is not secret-named. A command that hands a script to a
shell (``bash -lc SCRIPT``, see ``compound``) is proven when its script is,
reviewed as a string of its own. The circuit breaker (``breaker``) runs first,
on the string and on every script opened, and turns wipes of the workspace,
home or root into ``deny``. Anything else is ``ask``.

This is a prompt-skip gate, not a security boundary: a string reviewer can be
fooled, and the sandbox is what contains a command that runs without asking.

``review`` computes the outcome as a plain dataclass without touching pydantic
(``ax-policy review-command`` starts faster for it); ``review_command`` is the
same answer as the ``CommandReview`` contract.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from libcommon.paths import is_within

from .allowlist import (
    FIND_GLOBAL_FLAGS,
    FIND_NO_VALUE,
    FIND_VALUE,
    PATTERN_GUARDS,
    READ_ONLY_EXECUTABLES,
    SPECS,
    ExecutableSpec,
    ValueKind,
)
from .breaker import wipe_reason
from .pathcheck import PathRules, check_path

if TYPE_CHECKING:
    from .models import CommandReview
from .compound import MAX_SHELL_NESTING, shell_call, startup_problem
from .shellwords import NotSimple, Part, Word, split_sequence

# Executables must resolve (after symlinks) to a file below one of these.
SYSTEM_BIN_DIRS = ("/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/local/sbin")

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_COUNT = re.compile(r"^[+-]?[0-9]{1,18}[A-Za-z]{0,3}$")
_SED_PRINT_RANGE = re.compile(r"^[0-9]{1,12}(?:,[0-9]{1,12})?p$")
_WHEN = frozenset({"always", "never", "auto"})


@dataclass(frozen=True)
class Review:
    """The outcome of reviewing one shell command; the fields of the CommandReview contract."""

    verdict: Literal["read-only", "ask", "deny"]
    reasons: list[str]
    executable: str | None = None
    argv: list[str] | None = None

    def to_json(self) -> dict[str, Any]:
        """The CommandReview contract's JSON (its field names need no camelCase alias)."""
        return {
            "verdict": self.verdict,
            "reasons": list(self.reasons),
            "executable": self.executable,
            "argv": list(self.argv) if self.argv is not None else None,
        }

    def to_contract(self) -> CommandReview:
        from .models import CommandReview

        return CommandReview(
            verdict=self.verdict, reasons=self.reasons, executable=self.executable, argv=self.argv
        )


def review_command(
    command: str,
    workspace: str | os.PathLike[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    path_env: str | None = None,
    config: PathRules | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    home: str | os.PathLike[str] | None = None,
) -> CommandReview:
    """Review ``command`` as the CommandReview contract; see review."""
    outcome = review(
        command,
        workspace,
        cwd=cwd,
        path_env=path_env,
        config=config,
        state_dir=state_dir,
        home=home,
    )
    return outcome.to_contract()


def review(
    command: str,
    workspace: str | os.PathLike[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    path_env: str | None = None,
    config: PathRules | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    home: str | os.PathLike[str] | None = None,
) -> Review:
    """Review ``command`` as it would run in ``cwd`` (default: the workspace)."""
    ws = Path(os.path.realpath(workspace))
    where = Path(os.path.realpath(ws / cwd)) if cwd is not None else ws
    context = _Context(
        workspace=ws,
        cwd=where,
        home=Path(os.path.realpath(home if home is not None else Path("~").expanduser())),
        search_path=path_env if path_env is not None else os.environ.get("PATH", os.defpath),
        paths=_PathChecker(ws, where, config, state_dir),
    )
    return _review_string(command, context, nesting=0)


@dataclass(frozen=True)
class _Context:
    workspace: Path
    cwd: Path
    home: Path
    search_path: str
    paths: _PathChecker


def _review_string(command: str, ctx: _Context, nesting: int) -> Review:
    """One command string: the circuit breaker, then every command of its sequence."""
    wipe = wipe_reason(command, ctx.workspace, cwd=ctx.cwd, home=ctx.home)
    if wipe is not None:
        return Review(verdict="deny", reasons=[f"circuit breaker: {wipe}"])
    try:
        parts = split_sequence(command)
    except NotSimple as refusal:
        return _ask(f"not a plain command or sequence: {refusal.reason}")
    if len(parts) == 1:
        return _review_part(parts[0].words, ctx, nesting)
    return _combine(parts, [_review_part(part.words, ctx, nesting) for part in parts])


def _review_part(words: list[Word], ctx: _Context, nesting: int) -> Review:
    argv = [word.text for word in words]
    try:
        call = shell_call(words)
    except NotSimple as refusal:
        return _ask(refusal.reason, argv)
    if call is None:
        return _review_simple(words, ctx)
    if nesting >= MAX_SHELL_NESTING:
        return _ask(f"shells are reviewed at most {MAX_SHELL_NESTING} deep", argv)
    executable, problem = resolve_executable(call.shell, ctx.workspace, ctx.cwd, ctx.search_path)
    if executable is None:
        return _ask(problem or f"{call.shell} could not be resolved", argv)
    startup = startup_problem(call, ctx.workspace, ctx.home)
    if startup is not None:
        return Review(verdict="ask", reasons=[startup], executable=executable, argv=argv)
    inner = _review_string(call.script, ctx, nesting + 1)
    if inner.verdict != "read-only":
        reasons = [f"the script of {call.spelled}: {reason}" for reason in inner.reasons]
        return Review(verdict=inner.verdict, reasons=reasons, executable=executable, argv=argv)
    return Review(
        verdict="read-only",
        reasons=[
            f"{call.shell} resolves to {executable} and runs only its script, which is "
            f"proven read-only: {'; '.join(inner.reasons)}"
        ],
        executable=executable,
        argv=argv,
    )


def _combine(parts: list[Part], reviews: list[Review]) -> Review:
    """A sequence is read-only only when every command is; deny when any is denied."""
    total = len(parts)
    named = [
        (review, f"command {number} of {total} ({part.text})")
        for number, (part, review) in enumerate(zip(parts, reviews, strict=True), start=1)
    ]
    denied = [
        f"{name}: {reason}"
        for review, name in named
        if review.verdict == "deny"
        for reason in review.reasons
    ]
    if denied:
        return Review(verdict="deny", reasons=denied)
    failed = [
        f"{name}: {reason}"
        for review, name in named
        if review.verdict != "read-only"
        for reason in review.reasons
    ]
    if failed:
        return Review(verdict="ask", reasons=failed)
    operators = " ".join(sorted({part.operator for part in parts if part.operator is not None}))
    return Review(
        verdict="read-only",
        reasons=[
            f"{total} commands joined only by {operators}, with no redirection, substitution, "
            "glob or background job, and every one is proven read-only",
            *(f"{name}: {reason}" for review, name in named for reason in review.reasons),
        ],
    )


def _review_simple(words: list[Word], ctx: _Context) -> Review:
    """One simple command that is not a shell wrapper."""
    argv = [word.text for word in words]
    first = words[0]
    if _ASSIGNMENT.match(first.text):
        return _ask("it starts with a NAME=value assignment, which changes the environment", argv)
    if first.quoted:
        return _ask("the executable name is quoted", argv)
    if "/" in first.text:
        return _ask(
            f"the executable is named by a path ({first.text}); only a bare name looked up "
            "on PATH can be proven read-only",
            argv,
        )
    name = first.text
    if name not in READ_ONLY_EXECUTABLES:
        return _ask(f"{name} is not on the read-only allowlist", argv)

    executable, problem = resolve_executable(name, ctx.workspace, ctx.cwd, ctx.search_path)
    if executable is None:
        return _ask(problem or f"{name} could not be resolved", argv)

    problems = check_arguments(name, argv[1:], ctx.paths)
    if problems:
        return Review(verdict="ask", reasons=problems, executable=executable, argv=argv)
    return Review(
        verdict="read-only",
        reasons=[
            f"{name} is on the read-only allowlist and resolves to {executable}; every flag "
            "is on its allowlist and every path argument is inside the workspace"
        ],
        executable=executable,
        argv=argv,
    )


def _ask(reason: str, argv: list[str] | None = None) -> Review:
    return Review(verdict="ask", reasons=[reason], argv=argv)


def resolve_executable(
    name: str, workspace: Path, cwd: Path, search_path: str
) -> tuple[str | None, str | None]:
    """The realpath PATH gives ``name``, or None and why it cannot be trusted."""
    system = [Path(os.path.realpath(directory)) for directory in SYSTEM_BIN_DIRS]
    for entry in search_path.split(os.pathsep):
        # An empty or relative PATH entry is searched from the command's own folder.
        directory = Path(entry) if Path(entry).is_absolute() else cwd / (entry or ".")
        candidate = directory / name
        if not (candidate.is_file() and os.access(candidate, os.X_OK)):
            continue
        real = Path(os.path.realpath(candidate))
        if is_within(Path(os.path.normpath(candidate)), workspace) or is_within(real, workspace):
            return None, f"{name} resolves to {candidate}, inside the workspace"
        if not any(is_within(real, root) for root in system):
            return None, (
                f"{name} resolves to {real}, which is not under a system directory "
                f"({', '.join(SYSTEM_BIN_DIRS)})"
            )
        return str(real), None
    return None, f"{name} was not found on PATH"


class _PathChecker:
    """Checks one path argument; returns the problems found (none means fine)."""

    def __init__(
        self,
        workspace: Path,
        cwd: Path,
        config: PathRules | None,
        state_dir: str | os.PathLike[str] | None,
    ) -> None:
        self.workspace = workspace
        self.cwd = cwd
        self.config = config
        self.state_dir = state_dir

    def __call__(self, raw: str) -> list[str]:
        facts = check_path(
            raw, self.workspace, base=self.cwd, config=self.config, state_dir=self.state_dir
        )
        if not facts.valid:
            return [f"path {raw!r}: {facts.invalid_reason}"]
        if not facts.inside_workspace:
            return [f"path {raw!r}: {facts.containment_reason}"]
        if facts.secret:
            return [f"path {raw!r} is secret-named: {facts.secret_reason}"]
        return []


def check_arguments(name: str, args: Sequence[str], paths: _PathChecker) -> list[str]:
    if name == "find":
        return _check_find(args, paths)
    if name == "sed":
        return _check_sed(args, paths)
    return _check_flags_and_operands(name, SPECS[name], args, paths)


def _check_value(
    name: str, flag: str, value: str, kind: ValueKind, paths: _PathChecker
) -> list[str]:
    if isinstance(kind, frozenset):
        if value in kind:
            return []
        return [f"{name} {flag} accepts only {', '.join(sorted(kind))}, not {value!r}"]
    if kind == "count":
        return [] if _COUNT.match(value) else [f"{name} {flag} needs a number, not {value!r}"]
    if kind == "when":
        return [] if value in _WHEN else [f"{name} {flag} accepts always, never or auto"]
    if kind == "path":
        return paths(value)
    return []


def _check_flags_and_operands(
    name: str, spec: ExecutableSpec, args: Sequence[str], paths: _PathChecker
) -> list[str]:
    problems: list[str] = []
    operands: list[str] = []
    pattern_given = False
    options_done = False
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if options_done or arg == "-" or not arg.startswith("-"):
            operands.append(arg)
            continue
        if arg == "--":
            options_done = True
            continue
        if arg.startswith("--"):
            flag, has_value, value = arg.partition("=")
            pattern_given = pattern_given or flag in spec.pattern_flags
            if has_value:
                kind = spec.valued.get(flag) or spec.optional.get(flag)
                if kind is None:
                    problems.append(f"{name} flag {flag}= is not on its allowlist")
                else:
                    problems += _check_value(name, flag, value, kind, paths)
            elif flag in spec.flags:
                continue
            elif flag in spec.valued:
                if index >= len(args):
                    problems.append(f"{name} {flag} needs a value")
                else:
                    problems += _check_value(name, flag, args[index], spec.valued[flag], paths)
                    index += 1
            else:
                problems.append(f"{name} flag {flag} is not on its allowlist")
            continue
        body = arg[1:]
        if spec.numeric_shorthand and body.isdigit():
            continue
        for position, letter in enumerate(body):
            flag = "-" + letter
            pattern_given = pattern_given or flag in spec.pattern_flags
            if flag in spec.flags:
                continue
            if flag in spec.valued:
                value = body[position + 1 :]
                if not value:
                    if index >= len(args):
                        problems.append(f"{name} {flag} needs a value")
                        break
                    value = args[index]
                    index += 1
                problems += _check_value(name, flag, value, spec.valued[flag], paths)
                break
            problems.append(f"{name} flag {flag} is not on its allowlist")
            break
    return problems + _check_operands(name, spec, operands, pattern_given, paths)


def _check_operands(
    name: str,
    spec: ExecutableSpec,
    operands: list[str],
    pattern_given: bool,
    paths: _PathChecker,
) -> list[str]:
    if spec.max_operands is not None and len(operands) > spec.max_operands:
        return [f"{name} is reviewed with at most {spec.max_operands} operand(s)"]
    rule = spec.operands
    if rule == "none":
        return [f"{name} is reviewed only without operands"] if operands else []
    if rule == "text":
        return []
    if rule == "date-format":
        if len(operands) > 1 or any(not operand.startswith("+") for operand in operands):
            return [f"{name} is reviewed only with a single +FORMAT operand (anything else sets)"]
        return []
    if rule == "pattern-paths" and not pattern_given and operands:
        guard = PATTERN_GUARDS.get(name)
        found = guard.search(operands[0]) if guard is not None else None
        if found is not None:
            return [f"the {name} pattern uses {found.group(0)}, which reaches outside the files"]
        operands = operands[1:]
    problems: list[str] = []
    for operand in operands:
        problems += paths(operand)
    return problems


def _check_find(args: Sequence[str], paths: _PathChecker) -> list[str]:
    problems: list[str] = []
    index = 0
    while index < len(args) and args[index] in FIND_GLOBAL_FLAGS:
        index += 1
    while index < len(args) and not (args[index].startswith("-") or args[index] in ("(", ")", ",")):
        problems += paths(args[index])
        index += 1
    while index < len(args):
        arg = args[index]
        index += 1
        if arg in FIND_NO_VALUE:
            continue
        kind = FIND_VALUE.get(arg)
        if kind is None:
            # What follows an unknown predicate is its arguments: one reason is enough.
            problems.append(
                f"find {arg} is not on its allowlist (tests such as -name, -type and "
                "-maxdepth are; -exec, -delete, -fprint and -L never are)"
            )
            break
        if index >= len(args):
            problems.append(f"find {arg} needs a value")
            continue
        problems += _check_value("find", arg, args[index], kind, paths)
        index += 1
    return problems


def _check_sed(args: Sequence[str], paths: _PathChecker) -> list[str]:
    quiet = False
    script: str | None = None
    files: list[str] = []
    for arg in args:
        if arg in ("-n", "--quiet", "--silent"):
            quiet = True
        elif arg.startswith("-") and arg != "-":
            return [f"sed flag {arg} is not allowed: sed is reviewed only as sed -n <range>p FILE"]
        elif script is None:
            script = arg
        else:
            files.append(arg)
    if not quiet or script is None or not _SED_PRINT_RANGE.match(script):
        return ["sed is reviewed only as sed -n <line>[,<line>]p FILE..."]
    problems: list[str] = []
    for name in files:
        problems += paths(name)
    return problems
