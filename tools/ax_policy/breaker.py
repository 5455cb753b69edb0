"""The circuit breaker: a hardcoded deny for wiping the workspace, home or root.

Unlike the read-only proof, this reads *any* command string, however messy:
it splits it into simple commands roughly the way a shell would (quotes,
backslashes, operators, substitutions), looks through wrappers (``sudo``,
``env``, ``bash -c``, ``eval``, …) and denies a recursive removal, a
``find -delete``, or a disk format whose target would take out ``/``, the home
folder, the workspace or a folder containing either. It is best effort by
nature (obfuscation can hide a target); its misses still land in "ask", never
in "read-only".
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path, PurePosixPath

from libcommon.paths import is_within

MAX_UNWRAP_DEPTH = 4

_SEGMENT_BREAKS = frozenset(";&|(){}`\n")
_WORD_BREAKS = frozenset("<>")
_GLOB = re.compile(r"[*?\[]")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_HOME_VAR = re.compile(r"\$(?:\{HOME(?:[:?=+-][^}]*)?\}|HOME\b)")
_PWD_VAR = re.compile(r"\$(?:\{PWD(?:[:?=+-][^}]*)?\}|PWD\b)")
_ANY_VAR = re.compile(r"\$(?:\{[^}]*\}|[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])")
_DISK = re.compile(r"^/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|md|dm-|mapper/|loop)")

_WRAPPERS = frozenset(
    {
        "sudo", "doas", "command", "builtin", "exec", "nohup", "time", "nice", "ionice",
        "env", "stdbuf", "chrt", "timeout", "xargs", "busybox", "setsid", "unbuffer",
        "watch", "flock", "chroot", "su", "runuser",
    }
)  # fmt: skip
# Wrapper options whose value is the next word (sudo -u root rm …, nice -n 5 rm …).
_WRAPPER_VALUED = frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-n", "-c"})
_FIND_SELECTIVE = frozenset(
    {
        "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
        "-newer", "-anewer", "-cnewer", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin",
        "-size", "-user", "-group", "-uid", "-gid", "-perm", "-empty", "-samefile", "-inum",
        "-links", "-lname", "-ilname",
    }
)  # fmt: skip
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "busybox"})


def wipe_reason(
    command: str, workspace: Path, *, cwd: Path | None = None, home: Path | None = None
) -> str | None:
    """Why ``command`` would wipe the workspace, home or root; None when it would not."""
    where = cwd or workspace
    home_dir = home or Path("~").expanduser()
    return _check(command, workspace, where, home_dir, depth=0)


def _check(command: str, workspace: Path, cwd: Path, home: Path, depth: int) -> str | None:
    if depth > MAX_UNWRAP_DEPTH:
        return None
    for words in split_commands(command):
        words = _unwrap(words)
        if not words:
            continue
        name = PurePosixPath(words[0]).name
        script = _inner_script(name, words)
        if script is not None:
            found = _check(script, workspace, cwd, home, depth + 1)
        else:
            found = _check_simple(name, words[1:], workspace, cwd, home)
        if found is not None:
            return found
    return None


def split_commands(command: str) -> list[list[str]]:
    """The simple commands of a shell string, each as its words (quotes removed)."""
    commands: list[list[str]] = []
    words: list[str] = []
    current: list[str] = []
    in_word = False
    quote: str | None = None

    def end_word() -> None:
        nonlocal current, in_word
        if in_word:
            words.append("".join(current))
        current, in_word = [], False

    def end_command() -> None:
        nonlocal words
        end_word()
        if words:
            commands.append(words)
        words = []

    index = 0
    while index < len(command):
        char = command[index]
        if quote != "'" and command.startswith("${", index):
            # A parameter expansion is part of the word, braces and all.
            end = command.find("}", index)
            end = len(command) - 1 if end < 0 else end
            current.append(command[index : end + 1])
            in_word = True
            index = end + 1
            continue
        if quote == "'":
            if char == "'":
                quote = None
            else:
                current.append(char)
        elif quote == '"':
            if char == '"':
                quote = None
            elif char == "\\" and index + 1 < len(command):
                index += 1
                current.append(command[index])
            elif char == "`" or command.startswith("$(", index):
                # A substitution inside double quotes still runs: treat it as its own command.
                quote = None
                end_command()
                index += 1 if char == "`" else 2
                continue
            else:
                current.append(char)
        elif char == "\\" and index + 1 < len(command):
            index += 1
            if command[index] != "\n":
                current.append(command[index])
                in_word = True
        elif char in "'\"":
            quote, in_word = char, True
        elif command.startswith("$(", index):
            end_command()
            index += 2
            continue
        elif char in _SEGMENT_BREAKS:
            end_command()
        elif char in _WORD_BREAKS or char.isspace():
            end_word()
        else:
            current.append(char)
            in_word = True
        index += 1
    end_command()
    return commands


def _unwrap(words: list[str]) -> list[str]:
    """Drop assignments and wrappers in front of the real command."""
    index = 0
    while index < len(words):
        word = words[index]
        if _ASSIGNMENT.match(word):
            index += 1
            continue
        name = PurePosixPath(word).name
        if name not in _WRAPPERS:
            break
        index += 1
        while index < len(words) and (
            words[index].startswith("-") or _ASSIGNMENT.match(words[index])
        ):
            if words[index] in _WRAPPER_VALUED:
                index += 1
            index += 1
        if name == "timeout" and index < len(words):
            index += 1  # the duration
    return words[index:]


def _inner_script(name: str, words: list[str]) -> str | None:
    """The script of ``sh -c SCRIPT`` or ``eval WORDS``, if this is one."""
    if name == "eval":
        return " ".join(words[1:])
    if name not in _SHELLS:
        return None
    for index, word in enumerate(words[1:], start=1):
        if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
            return words[index + 1] if index + 1 < len(words) else None
    return None


def _check_simple(name: str, args: list[str], workspace: Path, cwd: Path, home: Path) -> str | None:
    if name == "rm":
        return _check_rm(args, workspace, cwd, home)
    if name == "find":
        return _check_find(args, workspace, cwd, home)
    if name == "dd":
        for arg in args:
            if arg.startswith("of=") and _DISK.match(arg[3:]):
                return f"dd writes over the disk device {arg[3:]}"
        return None
    if name.startswith("mkfs") or name in ("wipefs", "shred", "blkdiscard"):
        for arg in args:
            if _DISK.match(arg):
                return f"{name} destroys the disk device {arg}"
    return None


def _check_rm(args: list[str], workspace: Path, cwd: Path, home: Path) -> str | None:
    recursive = False
    targets: list[str] = []
    options_done = False
    for arg in args:
        if options_done or arg == "-" or not arg.startswith("-"):
            targets.append(arg)
        elif arg == "--":
            options_done = True
        elif arg == "--no-preserve-root":
            return "rm --no-preserve-root is refused outright"
        elif arg == "--recursive" or (not arg.startswith("--") and set(arg[1:]) & {"r", "R"}):
            recursive = True
    if not recursive:
        return None
    for target in targets:
        victim = _wiped(target, workspace, cwd, home)
        if victim is not None:
            return f"rm -r of {target!r} would delete {victim}"
    return None


def _check_find(args: list[str], workspace: Path, cwd: Path, home: Path) -> str | None:
    # A test that picks files by name, age or size makes it a clean-up, not a wipe.
    if "-delete" not in args or _FIND_SELECTIVE & set(args):
        return None
    roots: list[str] = []
    for arg in args:
        if arg in ("-H", "-L", "-P"):
            continue
        if arg.startswith("-") or arg in ("(", "!", ")"):
            break
        roots.append(arg)
    for root in roots or ["."]:
        victim = _wiped(root, workspace, cwd, home)
        if victim is not None:
            return f"find {root!r} -delete would delete {victim}"
    return None


def _wiped(target: str, workspace: Path, cwd: Path, home: Path) -> str | None:
    """What a recursive delete of ``target`` takes with it, if it is something vital."""
    text = _HOME_VAR.sub(str(home), target)
    text = _PWD_VAR.sub(str(cwd), text)
    # An unknown variable is read as empty: that is how "$DIR/" becomes "/".
    text = _ANY_VAR.sub("", text)
    if text == "~" or text.startswith("~/"):
        text = str(home) + text[1:]
    elif text.startswith("~"):
        text = str(Path(text).expanduser())
    parts = text.split("/")
    for index, part in enumerate(parts):
        if _GLOB.search(part):
            # rm -rf dir/* wipes dir's content: judge the folder the glob expands in.
            text = "/".join(parts[:index]) or ("/" if text.startswith("/") else ".")
            break
    if text == "":
        return None
    joined = os.path.normpath(cwd / text)
    if joined.startswith("//"):
        joined = "/" + joined.lstrip("/")
    candidates = {Path(joined)}
    # A path the system will not resolve (a folder it may not search, a chain of
    # links too deep) cannot be reached by rm either: the path as written is judged.
    with contextlib.suppress(OSError, RecursionError):
        candidates.add(Path(os.path.realpath(joined)))
    for candidate in candidates:
        if str(candidate) == "/":
            return "the root folder"
        if is_within(workspace, candidate):
            return (
                "the workspace"
                if candidate == workspace
                else f"{candidate}, which holds the workspace"
            )
        if is_within(home, candidate):
            return (
                "the home folder"
                if candidate == home
                else f"{candidate}, which holds the home folder"
            )
    return None
