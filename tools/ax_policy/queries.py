"""The two read-only questions other tools ask on a workspace's behalf.

``ax-policy review-command``, ``ax-policy check-path`` and ax-mcp's
``policy_review_command`` / ``policy_check_path`` all answer through these, so
the configuration, PATH and state root are taken into account the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libcommon.paths import StateLayout

from .command_review import Review, review
from .config import load_config, load_path_rules
from .pathcheck import validate_path

if TYPE_CHECKING:
    from .models import CommandReview, PathCheck


def review_in_workspace(layout: StateLayout, command: str, path_env: str) -> CommandReview:
    """Review one shell command string as it would run in the workspace."""
    return review_outcome_in_workspace(layout, command, path_env).to_contract()


def review_outcome_in_workspace(layout: StateLayout, command: str, path_env: str) -> Review:
    """review_in_workspace as a plain dataclass, without importing pydantic when unconfigured."""
    return review(
        command,
        layout.workspace,
        path_env=path_env,
        config=load_path_rules(layout),
        state_dir=layout.root,
    )


def check_path_in_workspace(layout: StateLayout, path: str, *, write: bool) -> PathCheck:
    """The facts about one path, plus ``ok``: would using it need no question?"""
    from .models import PathCheck

    facts = validate_path(
        path, layout.workspace, write=write, config=load_config(layout), state_dir=layout.root
    )
    return PathCheck(**facts.model_dump(), ok=facts.needs_no_question())
