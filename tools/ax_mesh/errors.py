"""A tool error: exit 1, and a JSON ``error`` object a program can branch on."""

from __future__ import annotations

from typing import Any

from libcommon.errors import OperationFailed

ERROR_CODES = (
    "not_found",
    "conflict",
    "forbidden",
    "invalid",
    "inbox_full",
    "unauthenticated",
    "result_too_large",
    "unknown_outcome",
)


class ToolError(OperationFailed):
    """A refused or failed tool call (exit 1, as DESIGN.md's table has it for a failed
    operation). ``code`` is one of ERROR_CODES; ``details`` ride along (a conflict's
    ``current_revision`` and ``author``, for example)."""

    def __init__(self, code: str, message: str, hint: str | None = None, **details: Any) -> None:
        super().__init__(message, hint)
        self.code = code
        self.details = details

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message, **self.details}
        if self.hint:
            body["hint"] = self.hint
        return {"error": body}


def not_found(what: str) -> ToolError:
    # One wording for "absent" and "not yours to read", so the answer tells nothing apart.
    return ToolError("not_found", f"{what} not found (or not readable by this seat)")
