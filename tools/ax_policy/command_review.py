"""Command review: a positive proof that a shell command only reads, or "ask".

``review_command`` answers ``read-only`` only when every one of these holds:
the string is one simple command, or a sequence of them joined only by
``| && || ;``, with nothing a shell would expand but globs (``shellwords``);
and every command of it is proven, in every folder it may run in (a ``cd``
moves the commands after it, see ``compound``): it does not start with an
assignment; its executable is a bare name on the curated allowlist
(``allowlist``) that PATH resolves to a real file under a system directory and
not inside the workspace; every flag is on that executable's own allowlist,
read the way that binary's own parser reads its words (``allowlist`` names the
grammars), with its globs expanded as the shell will expand them (``globs``);
and every path argument resolves inside the workspace to a file with one name,
is not a device and is not secret-named, including what diff would open inside
the folders it compares and the links grep -R and rg -L follow. A command that
hands a script to a shell (``bash -lc SCRIPT``, see ``compound``) is proven
when its script is, reviewed as a string of its own.
The circuit breaker (``breaker``) runs first, on the string and on every
script opened, and turns wipes of the workspace,
home or root into ``deny``. Anything else is ``ask``.

This is a prompt-skip gate, not a security boundary: a string reviewer can be
fooled, and the sandbox is what contains a command that runs without asking.

``review`` computes the outcome as a plain dataclass without touching pydantic
(``ax-policy review-command`` starts faster for it); ``review_command`` is the
same answer as the ``CommandReview`` contract.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
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
    FolderReads,
    ValueKind,
)
from .breaker import wipe_reason
from .globs import Budget, expand
from .pathcheck import PathFinding, PathRules, check_path

if TYPE_CHECKING:
    from .models import CommandReview
from .compound import (
    MAX_SHELL_NESTING,
    SHELLS,
    cd_operand,
    reads_startup_files,
    shell_call,
    startup_problem,
)
from .shellwords import NotSimple, Part, Word, split_sequence

# Executables must resolve (after symlinks) to a file below one of these.
SYSTEM_BIN_DIRS = ("/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/local/sbin")

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_COUNT = re.compile(r"^[+-]?[0-9]{1,18}[A-Za-z]{0,3}$")
_SED_PRINT_RANGE = re.compile(r"^[0-9]{1,12}(?:,[0-9]{1,12})?p$")
_WHEN = frozenset({"always", "never", "auto"})

# How many entries the review looks through inside the folders diff compares
# (or grep -R and rg -L search); beyond that it asks rather than prove links it
# has not seen.
MAX_FOLDER_WALK_ENTRIES = 10_000
# How many folders the commands of one sequence may run in (each cd adds one).
MAX_SEQUENCE_FOLDERS = 8


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
    # The shell wrapper whose startup files run before this string (it and
    # everything nested in it), or None: they may change how globs and cd work.
    startup: str | None = None
    # The shell that reads this string: bash at the top (ax-exec), else the wrapper's.
    shell: str = "bash"

    def at(self, cwd: Path) -> _Context:
        """The same review from another folder."""
        paths = _PathChecker(self.workspace, cwd, self.paths.config, self.paths.state_dir)
        return dataclasses.replace(self, cwd=cwd, paths=paths)


def _review_string(command: str, ctx: _Context, nesting: int) -> Review:
    """One command string: the circuit breaker, then every command of its sequence."""
    wipe = wipe_reason(command, ctx.workspace, cwd=ctx.cwd, home=ctx.home)
    if wipe is not None:
        return Review(verdict="deny", reasons=[f"circuit breaker: {wipe}"])
    try:
        parts = split_sequence(command)
    except NotSimple as refusal:
        return _ask(f"not a plain command or sequence: {refusal.reason}")
    if len(parts) == 1 and not _is_cd(parts[0].words):
        return _review_part(parts[0].words, ctx, nesting)
    # Where each command may run: a cd moves the commands after it, and one that
    # fails leaves them where they were, so they are reviewed in every folder they
    # may run in.
    places = [ctx]
    reviews: list[Review] = []
    for index, part in enumerate(parts):
        if _is_cd(part.words):
            review, places = _review_cd(parts, index, places)
        else:
            review = _everywhere(places, part.words, nesting)
        reviews.append(review)
    if len(parts) == 1:
        return reviews[0]
    return _combine(parts, reviews)


def _is_cd(words: list[Word]) -> bool:
    return words[0].text == "cd" and not words[0].quoted


def _review_cd(
    parts: list[Part], index: int, places: list[_Context]
) -> tuple[Review, list[_Context]]:
    """``cd DIR``: proven when DIR is a folder inside the workspace from every place it may run."""
    part = parts[index]
    argv = [word.text for word in part.words]
    if part.operator == "|" or (index > 0 and parts[index - 1].operator == "|"):
        return _ask(
            "cd in a pipeline runs in a subshell, or with lastpipe in the shell itself; "
            "use && or ;",
            argv,
        ), places
    try:
        operand = cd_operand(part.words)
    except NotSimple as refusal:
        return _ask(refusal.reason, argv), places
    targets: list[_Context] = []
    for place in places:
        if place.startup is not None:
            return _ask(
                f"{place.startup} runs startup files first, which may set CDPATH or replace "
                "cd with a function that runs files from the folder it enters (rvm, autoenv); "
                "cd is proven only where no startup file runs",
                argv,
            ), places
        finding = place.paths.finding(operand)
        if not finding.valid:
            return _ask(f"cd {operand}: {finding.invalid_reason}", argv), places
        if not finding.inside_workspace:
            return _ask(f"cd {operand}: {finding.containment_reason}", argv), places
        if finding.protected:
            # Commands are never started in a protected folder (see the engine's cwd rule).
            return _ask(f"cd {operand}: {finding.protected_reason}", argv), places
        target = Path(finding.resolved or "")
        # No such folder: cd fails there and changes nothing.
        if target.is_dir():
            targets.append(place.at(target))
    after = list({place.cwd: place for place in [*places, *targets]}.values())
    if len(after) > MAX_SEQUENCE_FOLDERS:
        return _ask(
            f"the commands after cd {operand} may run in more than {MAX_SEQUENCE_FOLDERS} "
            "folders; the review does not follow that many",
            argv,
        ), places
    shown = ", ".join(sorted({_relative(t.cwd, t.workspace) for t in targets}))
    goes = f"goes to {shown} inside the workspace" if targets else "names no folder and fails"
    return Review(
        verdict="read-only",
        reasons=[
            f"cd {operand} {goes} (bash's own cd: no startup file runs); the commands after "
            "it are reviewed there and, should it fail, where they were"
        ],
        argv=argv,
    ), after


def _everywhere(places: list[_Context], words: list[Word], nesting: int) -> Review:
    """One command reviewed in each folder it may run in; the strictest answer wins."""
    reviews = [_review_part(words, place, nesting) for place in places]
    if len(reviews) == 1:
        return reviews[0]
    for verdict in ("deny", "ask"):
        reasons = [
            f"in {_relative(place.cwd, place.workspace)}: {reason}"
            for place, review in zip(places, reviews, strict=True)
            if review.verdict == verdict
            for reason in review.reasons
        ]
        if reasons:
            return Review(verdict=verdict, reasons=reasons, argv=reviews[0].argv)
    where = ", ".join(_relative(place.cwd, place.workspace) for place in places)
    return Review(
        verdict="read-only",
        reasons=[f"in each folder it may run in ({where}): {reviews[0].reasons[0]}"],
        argv=reviews[0].argv,
    )


def _relative(path: Path, workspace: Path) -> str:
    return "the workspace" if path == workspace else os.path.relpath(path, workspace)


def _review_part(words: list[Word], ctx: _Context, nesting: int) -> Review:
    argv = [word.text for word in words]
    if ctx.shell == "zsh":
        equals = next((word.text for word in words if word.text.startswith("=")), None)
        if equals is not None:
            return _ask(
                f"zsh replaces the word {equals} with the path of the command it names "
                "(EQUALS), a file outside the workspace",
                argv,
            )
    if any(word.glob for word in words):
        return _review_globbed(words, ctx)
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
    startup = ctx.startup or (call.spelled if reads_startup_files(call) else None)
    inner_ctx = dataclasses.replace(ctx, startup=startup, shell=call.shell)
    inner = _review_string(call.script, inner_ctx, nesting + 1)
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
            f"{total} commands joined only by {operators}, with no redirection, substitution "
            "or background job, and every one is proven read-only",
            *(f"{name}: {reason}" for review, name in named for reason in review.reasons),
        ],
    )


def _review_globbed(words: list[Word], ctx: _Context) -> Review:
    """A simple command with glob words: reviewed as the argv the shell will build.

    Each glob is expanded as bash would (``globs``), with and without dotglob, and
    the resulting argv reviewed. bash sorts the matches by the locale's collation,
    which the review does not know, so the argv is also reviewed with each match
    of each glob moved to the glob's first place (every rotation): when no match
    looks like an option or another special word, where a word lands decides its
    role (a flag's value, the pattern, a file) and nothing else does, so every
    match is then proven in every role the shell's order may give it.
    """
    argv = [word.text for word in words]
    first = words[0]
    if first.glob:
        return _ask(f"the command name {first.text} is a glob", argv)
    if first.text in SHELLS:
        return _ask(f"a glob in the words of {first.text} (its script and options)", argv)
    if ctx.startup is not None:
        return _ask(
            f"{ctx.startup} runs startup files first, which may set shell options that change "
            "what a glob matches (nullglob, failglob, nocaseglob, dotglob, globstar, extglob); "
            "globs are proven only where no startup file runs",
            argv,
        )
    variants: list[list[list[str]]] = []
    for dotglob in (False, True):
        budget = Budget()
        try:
            expanded = [
                expand(word.text, ctx.cwd, ctx.workspace, dotglob=dotglob, budget=budget)
                if word.glob
                else [word.text]
                for word in words
            ]
        except NotSimple as refusal:
            return _ask(refusal.reason, argv)
        if expanded not in variants:
            variants.append(expanded)
    proven: list[Review] = []
    for expanded in variants:
        review = _review_expansion(words, expanded, ctx)
        if review.verdict != "read-only":
            return review
        proven.append(review)
    base = proven[0]
    names = sum(len(group) for word, group in zip(words, variants[0], strict=True) if word.glob)
    return Review(
        verdict="read-only",
        reasons=[
            *base.reasons,
            f"its globs expand inside the workspace to {names} name(s), with and without "
            "dotglob, each proven in every place the shell's sort order may put it",
        ],
        executable=base.executable,
        argv=base.argv,
    )


# The first characters that can change how the allowlisted executables read a word
# (options -x, head/tail's +N, strings' @FILE, find's ( ) ! ,): a match starting with
# one of them could change the role of the words after it, so where the shell's
# order puts it would matter.
_SPECIAL_START = re.compile(r"[-+@()!,]")


def _review_expansion(words: list[Word], expanded: list[list[str]], ctx: _Context) -> Review:
    """One expansion of a command's globs, in byte order and in every rotation."""
    flat = [text for group in expanded for text in group]
    shown = f" (as the shell expands it: {shlex.join(flat)})"
    review = _review_simple([Word(text, quoted=False) for text in flat], ctx)
    if review.verdict != "read-only":
        reasons = [review.reasons[0] + shown, *review.reasons[1:]]
        return dataclasses.replace(review, reasons=reasons)
    for word, group in zip(words, expanded, strict=True):
        odd = [text for text in group if word.glob and _SPECIAL_START.match(text)]
        if odd and group != [word.text]:
            return _ask(
                f"the glob {word.text} matches {odd[0]!r}, which the command could read as an "
                "option or a special word, and where the shell puts it depends on the locale's "
                "sort order",
                flat,
            )
    for position, (word, group) in enumerate(zip(words, expanded, strict=True)):
        for turn in range(1, len(group) if word.glob else 0):
            rotated = [*expanded[:position], group[turn:] + group[:turn], *expanded[position + 1 :]]
            args = [text for part in rotated for text in part][1:]
            problems = check_arguments(words[0].text, args, ctx.paths)
            if problems:
                return Review(
                    verdict="ask",
                    reasons=[
                        f"with the matches of {word.text} in another order "
                        f"({' '.join(group[turn:] + group[:turn])}): {problems[0]}",
                        *problems[1:],
                    ],
                    executable=review.executable,
                    argv=flat,
                )
    return review


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
    spec = SPECS.get(name)
    for runs in spec.runs if spec is not None else ():
        found, problem = resolve_executable(runs, ctx.workspace, ctx.cwd, ctx.search_path)
        if found is None:
            return _ask(f"{name} runs {runs} through PATH: {problem}", argv)

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
        try:
            found = candidate.is_file() and os.access(candidate, os.X_OK)
        except OSError:
            # A PATH folder the system will not search (no permission, a name too long)
            # is skipped, as the shell skips it.
            continue
        if not found:
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
        self._seen: dict[str, list[str]] = {}

    def finding(self, raw: str) -> PathFinding:
        return check_path(
            raw, self.workspace, base=self.cwd, config=self.config, state_dir=self.state_dir
        )

    def __call__(self, raw: str) -> list[str]:
        # A glob's matches are reviewed in several orders: each name is checked once.
        known = self._seen.get(raw)
        if known is None:
            known = self._seen[raw] = self._problems(raw)
        return list(known)

    def _problems(self, raw: str) -> list[str]:
        facts = self.finding(raw)
        if not facts.valid:
            return [f"path {raw!r}: {facts.invalid_reason}"]
        if not facts.inside_workspace:
            return [f"path {raw!r}: {facts.containment_reason}"]
        if facts.secret:
            return [f"path {raw!r} is secret-named: {facts.secret_reason}"]
        if facts.hard_linked:
            return [f"path {raw!r}: {facts.hard_linked_reason}"]
        if facts.special:
            return [f"path {raw!r}: {facts.special_reason}"]
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


@dataclass
class _Words:
    """An executable's arguments, split into options and operands the way its binary splits them."""

    operands: list[str] = field(default_factory=list)
    # The options given, each by its name in the executable's table (-e, --regexp).
    seen: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)
    # Where the first operand is, and which pattern flags came before it: with
    # POSIXLY_CORRECT set, getopt stops there and every later word is an operand.
    first_operand: int | None = None
    pattern_before_operand: bool = False


def _check_flags_and_operands(
    name: str, spec: ExecutableSpec, args: Sequence[str], paths: _PathChecker
) -> list[str]:
    if spec.response_files:
        listed = next((arg for arg in args if arg.startswith("@")), None)
        if listed is not None:
            return [
                f"{name} reads more arguments from the file {listed[1:]!r} that {listed!r} "
                "names, which this review cannot see"
            ]
    words = _split(name, spec, args, paths)
    problems = words.problems + _check_operands(
        name, spec, words.operands, bool(words.seen & spec.pattern_flags), paths
    )
    if (
        spec.grammar == "getopt"
        and spec.operands in ("paths", "pattern-paths")
        and words.first_operand is not None
    ):
        posix = list(args[words.first_operand :])
        if posix != words.operands:
            problems += _check_operands(name, spec, posix, words.pattern_before_operand, paths)
    if spec.folder_reads is not None and not problems:
        problems += _folder_problems(name, spec.folder_reads, words, paths)
    if words.seen & spec.follows_links and not problems:
        problems += _followed_link_problems(name, spec, words, paths)
    return list(dict.fromkeys(problems))


def _is_option(spec: ExecutableSpec, arg: str) -> bool:
    if spec.grammar == "jq":
        # jq: "-" then a letter or "-"; "-1" and "-" are a filter or a file.
        return len(arg) > 1 and arg[0] == "-" and (arg[1] == "-" or arg[1].isalpha())
    return len(arg) > 1 and arg[0] == "-"


def _split(name: str, spec: ExecutableSpec, args: Sequence[str], paths: _PathChecker) -> _Words:
    words = _Words()
    index = 0
    obsolete = spec.obsolete
    if obsolete is not None and args and obsolete.syntax.match(args[0]):
        first = args[0]
        index = 1
        if not obsolete.allowed.match(first):
            words.problems.append(f"{name} {first} {obsolete.refused}")
        elif first.startswith("+"):
            # With two files after it, or an older _POSIX2_VERSION, it is a file name.
            words.problems += paths(first)
    options_done = False
    while index < len(args):
        arg = args[index]
        index += 1
        if options_done or not _is_option(spec, arg):
            if words.first_operand is None:
                words.first_operand = index - 1
                words.pattern_before_operand = bool(words.seen & spec.pattern_flags)
            words.operands.append(arg)
            continue
        if arg == "--":
            options_done = True
            continue
        if arg.startswith("--"):
            index = _long_option(name, spec, arg, args, index, words, paths)
        else:
            index = _short_options(name, spec, arg, args, index, words, paths)
    return words


def _long_option(
    name: str,
    spec: ExecutableSpec,
    arg: str,
    args: Sequence[str],
    index: int,
    words: _Words,
    paths: _PathChecker,
) -> int:
    """Check one --name[=value] word; returns the index of the next word to read."""
    flag, has_value, value = arg.partition("=")
    words.seen.add(flag)
    if has_value:
        kind = spec.valued.get(flag) or spec.optional.get(flag)
        if kind is None or spec.grammar == "jq":
            words.problems.append(f"{name} flag {flag}= is not on its allowlist")
            return index
        for candidate in _attached_values(spec, value):
            words.problems += _check_value(name, flag, candidate, kind, paths)
        return index
    if flag in spec.flags or flag in spec.optional:
        return index
    if flag in spec.valued:
        if index >= len(args):
            words.problems.append(f"{name} {flag} needs a value")
            return index
        words.problems += _check_value(name, flag, args[index], spec.valued[flag], paths)
        return index + 1
    words.problems.append(f"{name} flag {flag} is not on its allowlist")
    return index


def _short_options(
    name: str,
    spec: ExecutableSpec,
    arg: str,
    args: Sequence[str],
    index: int,
    words: _Words,
    paths: _PathChecker,
) -> int:
    """Check one cluster of short options (-rn, -A3, -Io); returns the next word's index."""
    body = arg[1:]
    position = 0
    while position < len(body):
        flag = "-" + body[position]
        position += 1
        words.seen.add(flag)
        if flag in spec.flags:
            continue
        if flag in spec.valued:
            kind = spec.valued[flag]
            rest = body[position:]
            if spec.grammar == "tree":
                # tree takes the value from the next word and keeps reading the letters
                # after it; -L also takes digits written onto it (tree 2.1.3 and later).
                digits = _leading_digits(rest) if flag in spec.attached_digits else ""
                if digits:
                    position += len(digits)
                    words.problems += _check_value(name, flag, digits, kind, paths)
                    continue
                if index >= len(args):
                    words.problems.append(f"{name} {flag} needs a value")
                    return index
                words.problems += _check_value(name, flag, args[index], kind, paths)
                index += 1
                continue
            if rest:
                values = [rest]
                if spec.grammar == "clap" and rest.startswith("="):
                    values = _attached_values(spec, rest[1:])
            elif index < len(args):
                values = [args[index]]
                index += 1
            else:
                words.problems.append(f"{name} {flag} needs a value")
                return index
            for value in values:
                words.problems += _check_value(name, flag, value, kind, paths)
            return index
        if flag in spec.optional:
            # An optional value is only ever attached; alone, the next word is an operand.
            value = body[position:]
            if value:
                words.problems += _check_value(name, flag, value, spec.optional[flag], paths)
            return index
        words.problems.append(f"{name} flag {flag} is not on its allowlist")
        return index
    return index


def _attached_values(spec: ExecutableSpec, value: str) -> list[str]:
    """What the binary may take as a value given after "=" (rg -f=FILE, --file=FILE).

    ripgrep's parsers differ: clap (ripgrep 13) strips every "=" left at the
    start (``--file==/etc/passwd`` reads /etc/passwd), lexopt (ripgrep 14) keeps
    them. Both readings are checked.
    """
    if spec.grammar != "clap" or not value.startswith("="):
        return [value]
    return [value, value.lstrip("=")]


def _leading_digits(text: str) -> str:
    end = 0
    while end < len(text) and text[end] in "0123456789":
        end += 1
    return text[:end]


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


def _folder_problems(
    name: str, reads: FolderReads, words: _Words, paths: _PathChecker
) -> list[str]:
    """What diff would open inside folder operands that is not proven (links, hard links)."""
    operands = words.operands
    if len(operands) != 2 or "-" in operands:
        return []
    follow = not (words.seen & reads.no_follow_flags)
    recursive = bool(words.seen & reads.recursive_flags)
    folders = [_folder(paths.finding(operand)) for operand in operands]
    first, second = folders
    if first is not None and second is not None:
        walk = _FolderWalk(name, paths, "compares", recursive=recursive, follow=follow)
        return walk.problems(first) or walk.problems(second)
    for folder, other in ((first, operands[1]), (second, operands[0])):
        if folder is not None:
            # diff FILE FOLDER compares FILE with FOLDER/<FILE's name>.
            inner = folder / os.path.basename(other.rstrip("/"))
            return paths(os.path.relpath(inner, paths.cwd))
    return []


def _folder(finding: PathFinding) -> Path | None:
    if not finding.valid or finding.resolved is None:
        return None
    resolved = Path(finding.resolved)
    return resolved if resolved.is_dir() else None


def _followed_link_problems(
    name: str, spec: ExecutableSpec, words: _Words, paths: _PathChecker
) -> list[str]:
    """What grep -R or rg -L would reach through the symlinks inside the folders it searches.

    Both follow every link they meet while recursing, so each link below the
    searched folders is checked like a path argument, and followed into the
    folder it names. Files are not: a recursive search reads them without the
    flag too (see docs/ax-policy.md, Security).
    """
    operands = words.operands
    if spec.operands == "pattern-paths" and not (words.seen & spec.pattern_flags):
        operands = operands[1:]
    walk = _FolderWalk(name, paths, "searches", recursive=True, follow=True, files=False)
    # With no path operand both search the folder they run in.
    for operand in operands or ["."]:
        folder = _folder(paths.finding(operand))
        if folder is not None and folder not in walk.visited:
            found = walk.problems(folder)
            if found:
                return found
    return []


class _FolderWalk:
    """Looks through the folders a command reads for entries it would follow out of the workspace.

    diff compares the files inside folder operands (``files``: a hard-linked file
    or a device there is checked too); grep -R and rg -L only follow links.
    """

    def __init__(
        self,
        name: str,
        paths: _PathChecker,
        verb: str,
        *,
        recursive: bool,
        follow: bool,
        files: bool = True,
    ) -> None:
        self.name = name
        self.paths = paths
        self.verb = verb
        self.recursive = recursive
        self.follow = follow
        self.files = files
        self.budget = MAX_FOLDER_WALK_ENTRIES
        self.visited: set[Path] = set()

    def problems(self, root: Path) -> list[str]:
        pending = [root]
        self.visited.add(root)
        while pending:
            folder = pending.pop()
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        self.budget -= 1
                        if self.budget < 0:
                            return [
                                f"{self.name} {self.verb} folders holding more than "
                                f"{MAX_FOLDER_WALK_ENTRIES} entries; the review does not look "
                                "through that many for links leading out"
                            ]
                        found = self._entry(entry, pending)
                        if found:
                            return found
            except OSError as exc:
                return [f"{self.name} would read the folder {folder}: {exc.strerror}"]
        return []

    def _entry(self, entry: os.DirEntry[str], pending: list[Path]) -> list[str]:
        if entry.is_symlink():
            if not self.follow:
                return []
            found = self.paths(self._shown(entry))
            if found:
                return [
                    f"{self.name} follows the symlinks inside the folders it {self.verb}",
                    *found,
                ]
            target = Path(os.path.realpath(entry.path))
            if self.recursive and target.is_dir() and target not in self.visited:
                self.visited.add(target)
                pending.append(target)
            return []
        if entry.is_dir(follow_symlinks=False):
            if self.recursive:
                pending.append(Path(entry.path))
            return []
        if not self.files:
            return []
        info = entry.stat(follow_symlinks=False)
        if info.st_nlink > 1 or not stat.S_ISREG(info.st_mode):
            found = self.paths(self._shown(entry))
            if found:
                return [f"{self.name} opens the files inside the folders it compares", *found]
        return []

    def _shown(self, entry: os.DirEntry[str]) -> str:
        return os.path.relpath(entry.path, self.paths.cwd)


def _check_find(args: Sequence[str], paths: _PathChecker) -> list[str]:
    problems: list[str] = []
    index = 0
    while index < len(args) and args[index] in FIND_GLOBAL_FLAGS:
        index += 1
    # Starting points run up to the first word find reads as an expression: "-x",
    # "(" or "!". A leading ")" or "," and a lone "-" are file names to find.
    while index < len(args) and not (
        (args[index].startswith("-") and args[index] != "-") or args[index] in ("(", "!")
    ):
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
    quiet = given = False
    script: str | None = None
    files: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        # Options only before the first operand: after it, POSIXLY_CORRECT makes
        # them file names.
        before = script is None and not files
        if arg in ("-n", "--quiet", "--silent") and before:
            quiet = True
        elif arg in ("-e", "--expression") and before and not given and index < len(args):
            # The script given by -e: every operand is then a file.
            script, given = args[index], True
            index += 1
        elif arg.startswith("--expression=") and before and not given:
            script, given = arg.partition("=")[2], True
        elif arg.startswith("-") and arg != "-":
            return [
                f"sed flag {arg} is not allowed here: sed is reviewed only as "
                "sed -n [-e] <range>p FILE"
            ]
        elif script is None:
            script = arg
        else:
            files.append(arg)
    if not quiet or script is None or not _SED_PRINT_RANGE.match(script):
        return ["sed is reviewed only as sed -n [-e] <line>[,<line>]p FILE..."]
    problems: list[str] = []
    for name in files:
        problems += paths(name)
    return problems
