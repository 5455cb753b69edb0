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
        Signal,
        Summary,
        UnitReport,
        Verdict,
    )
    from ax_check.recipes import recipe_rows, replay_key

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
}

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "KINDS",
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
    "Signal",
    "Summary",
    "UnitReport",
    "Verdict",
    "detect",
    "recipe_rows",
    "replay_key",
    "run_check",
]

__getattr__ = lazy_getattr(__name__, _MODULE_OF)
