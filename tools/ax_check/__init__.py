"""ax-check: typed verification: build/test/lint commands resolved from the project's own manifests.

This module is the public face: other tools import only what it names.
``run_check(CheckRequest(kind="test", workspace=...))`` returns a CheckResult
whose verdict is the command's exit status; ``detect(workspace)`` reports the
units, their recipes and the toolchains found without spawning anything.
"""

from ax_check.check import (
    DEFAULT_TIMEOUT_S,
    BadRequest,
    CheckRequest,
    EvidenceNotRecorded,
    Hooks,
    run_check,
)
from ax_check.detect import detect
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
