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
    from ax_check.browser import (
        SCREENSHOT_SIGNAL,
        BrowserBadRequest,
        BrowserRequest,
        parse_flow,
        run_browser_check,
    )
    from ax_check.check import (
        DEFAULT_TIMEOUT_S,
        BadRequest,
        CheckRequest,
        EvidenceNotRecorded,
        Hooks,
        run_check,
    )
    from ax_check.detection import detect
    from ax_check.flow import (
        DEFAULT_STEP_TIMEOUT_S,
        MAX_FLOW_STEPS,
        MAX_STEP_TIMEOUT_S,
        Flow,
        FlowResult,
        Step,
    )
    from ax_check.models import (
        BROWSER_KIND,
        GATE_KINDS,
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
    "SCREENSHOT_SIGNAL": "ax_check.browser",
    "BrowserBadRequest": "ax_check.browser",
    "BrowserRequest": "ax_check.browser",
    "parse_flow": "ax_check.browser",
    "run_browser_check": "ax_check.browser",
    "DEFAULT_STEP_TIMEOUT_S": "ax_check.flow",
    "MAX_FLOW_STEPS": "ax_check.flow",
    "MAX_STEP_TIMEOUT_S": "ax_check.flow",
    "Step": "ax_check.flow",
    "Flow": "ax_check.flow",
    "FlowResult": "ax_check.flow",
    "BROWSER_KIND": "ax_check.models",
    "GATE_KINDS": "ax_check.models",
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
    "BROWSER_KIND",
    "DEFAULT_STEP_TIMEOUT_S",
    "DEFAULT_TIMEOUT_S",
    "GATE_KINDS",
    "INTENTS",
    "KINDS",
    "MAX_FLOW_STEPS",
    "MAX_STEP_TIMEOUT_S",
    "SCREENSHOT_SIGNAL",
    "SETUP_DEFAULT_TIMEOUT_S",
    "BadRequest",
    "BrowserBadRequest",
    "BrowserRequest",
    "CheckRequest",
    "CheckResult",
    "DetectReport",
    "EvidenceNotRecorded",
    "Finding",
    "Flow",
    "FlowResult",
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
    "Step",
    "Summary",
    "UnitReport",
    "Verdict",
    "detect",
    "parse_flow",
    "plan_setup",
    "recipe_rows",
    "replay_key",
    "run_browser_check",
    "run_check",
    "run_setup",
]

__getattr__ = lazy_getattr(__name__, _MODULE_OF)
