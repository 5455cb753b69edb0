"""Running one project setup: select the unit, resolve the row, run it, record it.

Runs through ax-exec as a check does, always unsandboxed and with the network
(an install fetches; a migration reaches the project's database), in the
unit's folder with the unit's environment. Its evidence is ``setup.started``
and ``setup.completed``, never ``check.*``: a setup says "we fetched" or "we
migrated", never "we verified", so nothing that reads checks can count it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from ax_check.check import (
    BadRequest,
    EvidenceNotRecorded,
    Hooks,
    _message,
    _record,
    _startable,
    judge,
)
from ax_check.models import (
    OutputExcerpt,
    RecipeRef,
    SetupIntent,
    SetupPlan,
    SetupResult,
    SetupVerdict,
)
from ax_check.parsers import HeadTail
from ax_check.recipes import Blocker
from ax_check.setup import INTENTS, SetupFacts, SetupResolved, gather_setup_facts, resolve_setup
from ax_check.toolchains import Toolchains
from ax_check.units import UnitRefused, choose_unit, discover_units, explain, locate
from ax_exec import ExecOutcome, ExecSpec, run_managed
from libcommon.errors import AxError, OperationFailed, UsageError
from libcommon.paths import StateLayout, check_session_id, state_layout
from libcommon.projectenv import ChildEnv, child_env, find_venv, own_venv

# An install of a large monorepo can take a while; a migration should not.
SETUP_DEFAULT_TIMEOUT_S = 1800.0
SETUP_MAX_TIMEOUT_S = 4 * 3600.0
SETUP_OUTPUT_BYTES = 64 * 1024


@dataclass(frozen=True)
class SetupRequest:
    intent: str
    workspace: str | os.PathLike[str] | None = None
    project: str | None = None
    session: str | None = None
    timeout_s: float = SETUP_DEFAULT_TIMEOUT_S
    # The replay key a person approved: a setup that resolves to another key is refused.
    expect_key: str | None = None


class SetupChanged(OperationFailed):
    """What the setup resolves to now is not what was approved: nothing runs or is recorded."""


@dataclass(frozen=True)
class PreparedSetup:
    request: SetupRequest
    intent: SetupIntent
    facts: SetupFacts
    layout: StateLayout | None
    resolution: SetupResolved | Blocker
    workspace: Path
    selection: str
    # What the command sees: the project venv first on PATH (programs were found on it).
    child: ChildEnv


def _validate(request: SetupRequest) -> SetupIntent:
    intent = next((known for known in INTENTS if known == request.intent), None)
    if intent is None:
        raise BadRequest(
            f"unknown intent {request.intent!r}", hint=f"intents: {', '.join(INTENTS)}"
        )
    if not 0 < request.timeout_s <= SETUP_MAX_TIMEOUT_S:
        raise BadRequest(f"--timeout must be in (0, {SETUP_MAX_TIMEOUT_S:g}] seconds")
    if request.session is not None:
        try:
            check_session_id(request.session)
        except UsageError as exc:
            raise BadRequest(exc.message, exc.hint) from None
    return intent


def prepare_setup(request: SetupRequest, environ: Mapping[str, str] | None = None) -> PreparedSetup:
    """Everything up to the spawn: a bad request is refused before anything is written."""
    intent = _validate(request)
    location = locate(request.workspace, None, environ)
    workspace = location.workspace
    layout = state_layout(workspace, environ) if request.session is not None else None
    try:
        choice = choose_unit(discover_units(workspace), location, request.project)
    except UnitRefused as exc:
        raise BadRequest(exc.message, hint=exc.hint) from None
    # Programs are looked up on the PATH the command will get: the project venv first.
    venv = find_venv(choice.unit.path, workspace)
    child = child_env(os.environ if environ is None else environ, venv, own_venv())
    facts = gather_setup_facts(workspace, choice.unit, Toolchains(child.path, environ))
    try:
        resolution = resolve_setup(facts, intent)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    if request.expect_key is not None:
        now = resolution.replay_key if isinstance(resolution, SetupResolved) else None
        if now != request.expect_key:
            raise SetupChanged(
                f"the {intent} in unit {choice.unit.id} changed since it was approved (its "
                "command, script or a covered file is not what the approval named); "
                "nothing ran",
                hint="ask again for the setup as it is now",
            )
    return PreparedSetup(
        request, intent, facts, layout, resolution, workspace, explain(location, choice), child
    )


def _event(prepared: PreparedSetup, recipe_id: str | None, key: str | None) -> dict[str, object]:
    return {
        "intent": prepared.intent,
        "project": prepared.facts.unit.id,
        "recipeId": recipe_id,
        "replayKey": key,
    }


def completed_event(prepared: PreparedSetup, result: SetupResult) -> dict[str, object]:
    recipe_id = result.recipe.id if result.recipe is not None else None
    if recipe_id is None and result.would_run is not None:
        recipe_id = result.would_run.id
    return {
        "type": "setup.completed",
        **_event(prepared, recipe_id, result.replay_key),
        "verdict": result.verdict,
        "exitCode": result.exit_code,
        "termination": result.termination,
        "reason": result.reason,
    }


def _verdict(outcome: ExecOutcome) -> SetupVerdict:
    verdict = judge(outcome)
    return "succeeded" if verdict == "passed" else "failed" if verdict == "failed" else "error"


def execute_setup(prepared: PreparedSetup, hooks: Hooks | None = None) -> SetupResult:
    """Run a prepared setup (or record why it cannot run) and return its result."""
    hooks = hooks or Hooks()
    session, resolution, unit = prepared.request.session, prepared.resolution, prepared.facts.unit
    workspace, selection = str(prepared.workspace), prepared.selection
    if isinstance(resolution, Blocker):
        planned = resolution.command
        result = SetupResult(
            intent=prepared.intent,
            project=unit.id,
            verdict="unsupported",
            reason=resolution.reason,
            message=resolution.message,
            cure=resolution.cure,
            would_run=None
            if planned is None or resolution.recipe_id is None
            else RecipeRef(id=resolution.recipe_id, command=planned.display),
            workspace=workspace,
            selection=selection,
        )
        try:
            _record(prepared.layout, session, [completed_event(prepared, result)])
        except AxError as exc:
            raise EvidenceNotRecorded(result, exc) from exc
        return result
    argv = resolution.command.argv
    child = prepared.child
    spec = ExecSpec(
        argv=list(argv),
        cwd=str(unit.path),
        timeout_s=prepared.request.timeout_s,
        sandbox="none",
        allow_net=True,
        workspace=str(prepared.workspace),
        max_output_bytes=SETUP_OUTPUT_BYTES,
        spill_dir=str(prepared.layout.objects_dir) if prepared.layout is not None else None,
        env=child.set,
        env_deny_patterns=list(child.unset),
    )
    combined = HeadTail()
    if _startable(argv[0], unit.path, child.path):
        _record(
            prepared.layout,
            session,
            [
                {
                    "type": "setup.started",
                    **_event(prepared, resolution.recipe_id, resolution.replay_key),
                }
            ],
        )
    outcome = run_managed(
        spec,
        abort=hooks.abort,
        on_output=lambda stream, chunk: combined.feed(chunk),
        environ=hooks.environ,
    )
    head, tail = combined.texts()
    result = SetupResult(
        intent=prepared.intent,
        project=unit.id,
        verdict=_verdict(outcome),
        message=_message(outcome),
        recipe=RecipeRef(id=resolution.recipe_id, command=resolution.command.display),
        replay_key=resolution.replay_key,
        files=[path for path, _ in resolution.files],
        exit_code=outcome.exit_code,
        termination=outcome.termination,
        duration_ms=outcome.duration_ms,
        output=OutputExcerpt(
            head=head,
            tail=tail,
            bytes=combined.total,
            truncated=combined.truncated,
            spill_path=outcome.spill_path,
        ),
        workspace=workspace,
        selection=selection,
    )
    try:
        _record(prepared.layout, session, [completed_event(prepared, result)])
    except AxError as exc:
        raise EvidenceNotRecorded(result, exc) from exc
    return result


def run_setup(request: SetupRequest, hooks: Hooks | None = None) -> SetupResult:
    """Prepare and execute one setup; a bad request raises BadRequest (nothing recorded)."""
    return execute_setup(prepare_setup(request, hooks.environ if hooks else None), hooks)


def plan_setup(request: SetupRequest, environ: Mapping[str, str] | None = None) -> SetupPlan:
    """What ``run_setup`` would run and its replay key, spawning and recording nothing."""
    prepared = prepare_setup(replace(request, session=None), environ)
    resolution = prepared.resolution
    if isinstance(resolution, Blocker):
        return SetupPlan(
            intent=prepared.intent,
            project=prepared.facts.unit.id,
            reason=resolution.reason,
            message=resolution.message,
            cure=resolution.cure,
        )
    return SetupPlan(
        intent=prepared.intent,
        project=prepared.facts.unit.id,
        recipe=RecipeRef(id=resolution.recipe_id, command=resolution.command.display),
        replay_key=resolution.replay_key,
        files=[path for path, _ in resolution.files],
    )
