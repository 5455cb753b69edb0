"""`ax-check detect`: the units, what each kind resolves to, and the toolchains found.

Stat-only, like everything resolution does: nothing is spawned.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ax_check.facts import gather_facts
from ax_check.models import (
    KINDS,
    DetectReport,
    KindResolution,
    RecipeRef,
    ToolchainReport,
    UnitReport,
)
from ax_check.recipes import TARGET_PLACEHOLDER, Blocker, resolve
from ax_check.toolchains import REPORTED_TOOLCHAINS, Toolchains, child_env, environment_ref
from ax_check.units import discover_units
from libcommon.paths import resolve_workspace


def detect(
    workspace: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> DetectReport:
    root = resolve_workspace(workspace)
    toolchains = Toolchains.from_environ(environ)
    discovery = discover_units(root)
    units = []
    for unit in discovery.units:
        facts = gather_facts(root, unit, toolchains)
        kinds = []
        for kind in KINDS:
            targets = (TARGET_PLACEHOLDER,) if kind == "test-targeted" else ()
            resolution = resolve(facts, kind, targets)
            if isinstance(resolution, Blocker):
                kinds.append(
                    KindResolution(
                        kind=kind,
                        status="unsupported",
                        recipe=None,
                        reason=resolution.reason,
                        message=resolution.message,
                        cure=resolution.cure,
                    )
                )
                continue
            kinds.append(
                KindResolution(
                    kind=kind,
                    status="ready",
                    recipe=RecipeRef(
                        id=resolution.recipe_id,
                        command=resolution.command.display.replace(
                            f"'{TARGET_PLACEHOLDER}'", TARGET_PLACEHOLDER
                        ),
                    ),
                    replay_key=None if targets else resolution.replay_key,
                )
            )
        units.append(
            UnitReport(
                id=unit.id,
                path=str(unit.path),
                manifests=list(unit.manifests),
                ecosystems=list(unit.ecosystems),
                kinds=kinds,
                environment=environment_ref(facts.python),
            )
        )
    # What a unit's command finds: this PATH without ax-check's own venv (toolchains.py).
    seen = Toolchains(path=child_env(environ, None).path, environ=environ)
    return DetectReport(
        workspace=str(root),
        units=units,
        toolchains=[
            ToolchainReport(name=name, path=seen.find(name)) for name in REPORTED_TOOLCHAINS
        ],
        notes=list(discovery.notes),
    )
