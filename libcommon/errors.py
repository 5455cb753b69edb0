"""Exit statuses and the typed errors that map onto them.

Every tool exits with a code from one table (DESIGN.md, "Exit status"), so a
caller can branch on the number without parsing text. Core code raises an
``AxError`` subclass; the CLI layer turns it into a message on stderr and the
matching exit status.
"""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    OK = 0
    FAILED = 1
    USAGE = 2
    UNTRUSTED = 3
    FENCED = 4
    UNSUPPORTED = 5
    # ax-exec run mirrors its child; these are the codes it adds of its own.
    TIMEOUT = 124
    SPAWN_ERROR = 127
    ABORTED = 130
    BROKEN_PIPE = 141


class AxError(Exception):
    """An error a person or program can act on: what went wrong and what to do."""

    status: ExitStatus = ExitStatus.FAILED

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class OperationFailed(AxError):
    status = ExitStatus.FAILED


class UsageError(AxError):
    """Malformed input or an impossible request: nothing was written."""

    status = ExitStatus.USAGE


class NotTrusted(AxError):
    status = ExitStatus.UNTRUSTED


class Fenced(AxError):
    """A live foreign holder owns the lock, lease or session."""

    status = ExitStatus.FENCED


class Unsupported(AxError):
    """The operation cannot be done here; ``reason`` is a stable, typed token."""

    status = ExitStatus.UNSUPPORTED

    def __init__(self, message: str, reason: str, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.reason = reason


class CorruptStore(AxError):
    """A store on disk could not be read. It is never treated as empty."""

    status = ExitStatus.FAILED

    def __init__(self, path: str, problem: str, line: int | None = None) -> None:
        where = f"{path}:{line}" if line is not None else path
        super().__init__(
            f"corrupt store {where}: {problem}",
            hint="inspect or move the file aside by hand; ax will not rewrite it",
        )
        self.path = path
        self.line = line
        self.problem = problem
