"""ax-check: typed verification: build/test/lint commands resolved from the project's own manifests.

This module is the public face: other tools import only what it names.
``run_check(CheckRequest(kind="test", workspace=...))`` returns a CheckResult
whose verdict is the command's exit status; ``detect(workspace)`` reports the
units, their recipes and the toolchains found without spawning anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libcommon.lazy import lazy_getattr

if TYPE_CHECKING:
    from ax_check.check import (
        DEFAULT_TIMEOUT_S,
        BadRequest,
        CheckRequest,
        EvidenceNotRecorded,
        Hooks,
        run_check,
    )
    from ax_check.detection import detect
    from ax_check.models import (
        KINDS,
        CheckResult,
        DetectReport,
        Finding,
        Kind,
        KindResolution,
        OutputExcerpt,
        Reason,
        RecipeRef,
        RecipeRow,
        SetupIntent,
        SetupPlan,
        SetupResult,
        Signal,
        Summary,
        UnitReport,
        Verdict,
    )
    from ax_check.recipes import recipe_rows, replay_key
    from ax_check.setup import INTENTS
    from ax_check.setup_run import (
        SETUP_DEFAULT_TIMEOUT_S,
        SetupChanged,
        SetupRequest,
        plan_setup,
        run_setup,
    )

_MODULE_OF = {
    "DEFAULT_TIMEOUT_S": "ax_check.check",
    "BadRequest": "ax_check.check",
    "CheckRequest": "ax_check.check",
    "EvidenceNotRecorded": "ax_check.check",
    "Hooks": "ax_check.check",
    "run_check": "ax_check.check",
    "detect": "ax_check.detection",
    "KINDS": "ax_check.models",
    "CheckResult": "ax_check.models",
    "DetectReport": "ax_check.models",
    "Finding": "ax_check.models",
    "Kind": "ax_check.models",
    "KindResolution": "ax_check.models",
    "OutputExcerpt": "ax_check.models",
    "Reason": "ax_check.models",
    "RecipeRef": "ax_check.models",
    "RecipeRow": "ax_check.models",
    "Signal": "ax_check.models",
    "Summary": "ax_check.models",
    "UnitReport": "ax_check.models",
    "Verdict": "ax_check.models",
    "recipe_rows": "ax_check.recipes",
    "replay_key": "ax_check.recipes",
    "SetupIntent": "ax_check.models",
    "SetupPlan": "ax_check.models",
    "SetupResult": "ax_check.models",
    "INTENTS": "ax_check.setup",
    "SETUP_DEFAULT_TIMEOUT_S": "ax_check.setup_run",
    "SetupChanged": "ax_check.setup_run",
    "SetupRequest": "ax_check.setup_run",
    "plan_setup": "ax_check.setup_run",
    "run_setup": "ax_check.setup_run",
}

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "INTENTS",
    "KINDS",
    "SETUP_DEFAULT_TIMEOUT_S",
    "BadRequest",
    "CheckRequest",
    "CheckResult",
    "DetectReport",
    "EvidenceNotRecorded",
    "Finding",
    "Hooks",
    "Kind",
    "KindResolution",
    "OutputExcerpt",
    "Reason",
    "RecipeRef",
    "RecipeRow",
    "SetupChanged",
    "SetupIntent",
    "SetupPlan",
    "SetupRequest",
    "SetupResult",
    "Signal",
    "Summary",
    "UnitReport",
    "Verdict",
    "detect",
    "plan_setup",
    "recipe_rows",
    "replay_key",
    "run_check",
    "run_setup",
]

__getattr__ = lazy_getattr(__name__, _MODULE_OF)
