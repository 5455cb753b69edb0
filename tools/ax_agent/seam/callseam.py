"""The seam a tool sees during one call: the session's seam, bound to the call.

It adds the evidence a tool must not forge or forget: ``exec.run`` is
bracketed by ``command.started`` (appended before the spawn, so a crash
mid-command leaves a start without an end: "effects unknown") and
``command.ended``; ``check.run`` runs under the sandbox profile the call's
decision names unless the tool named one. The call id comes from the loop, so
a tool cannot write evidence for another call.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from .models import CheckRunRequest

if TYPE_CHECKING:
    from ax_policy import Decision

    from ..session import Session
    from . import OutputHook, Seam


@dataclass
class CallSeam:
    session: Session
    call_id: str
    decision: Decision

    @property
    def base(self) -> Seam:
        return self.session.seam

    def call(
        self,
        verb: str,
        request: BaseModel,
        *,
        abort: threading.Event | None = None,
        on_output: OutputHook | None = None,
    ) -> Any:
        if verb == "exec.run":
            return self._exec(request, abort)
        if verb == "check.run" and isinstance(request, CheckRunRequest) and request.sandbox is None:
            profile = self.decision.sandbox_profile if self.decision.exec_boundary else None
            request = request.model_copy(update={"sandbox": profile or "none"})
        return self.base.call(verb, request, abort=abort)

    def _exec(self, spec: Any, abort: threading.Event | None) -> Any:
        from ax_exec import profile_status

        command: str | list[str] = spec.shell if spec.shell is not None else list(spec.argv)
        cwd = os.path.realpath(spec.cwd or self.session.workspace)
        sandbox = profile_status(spec.sandbox, spec.allow_net)
        self.session.record(
            {
                "type": "command.started",
                "callId": self.call_id,
                "command": command,
                "cwd": cwd,
                "sandbox": sandbox.to_json(),
            }
        )
        watcher = self.session.on_output
        hook: OutputHook | None = None
        if watcher is not None:
            hook = lambda stream, chunk: watcher(self.call_id, stream, chunk)  # noqa: E731
        try:
            outcome = self.base.call("exec.run", spec, abort=abort, on_output=hook)
        except Exception:
            # The run never produced an outcome: say it did not start, so no start dangles.
            self.session.record(
                {
                    "type": "command.ended",
                    "callId": self.call_id,
                    "termination": "spawn-error",
                    "exitCode": None,
                    "durationMs": 0,
                }
            )
            raise
        self.session.record(
            {
                "type": "command.ended",
                "callId": self.call_id,
                "termination": outcome.termination,
                "exitCode": outcome.exit_code,
                "durationMs": outcome.duration_ms,
            }
        )
        return outcome
