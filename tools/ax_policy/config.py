"""Layered configuration that can only narrow.

Two layers: the user layer at ``<state>/config.json`` (preferences plus deny
lists) and the workspace layer at ``<ws>/.ax/config.json`` (deny lists only,
because a workspace is attacker-influenceable). Neither schema can express an
allow list, so merging is a union of deny lists and no layer can widen what
the engine permits. Unknown keys, wrong types and bad JSON are hard errors
that name the file and the field; the merged result records each source's
sha256 so a session's evidence says exactly what configured it.

``load_path_rules`` is what a path check or command review needs: when neither
file exists it answers "no deny lists" without importing pydantic, which keeps
``ax-policy review-command`` quick to start; otherwise it is ``load_config``.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from libcommon import jsonio
from libcommon.cliapp import describe_validation_error
from libcommon.errors import UsageError
from libcommon.paths import StateLayout, is_within

from .pathcheck import PathRules
from .stores import UnreadableFile, read_capped

if TYPE_CHECKING:
    from .models import ConfigSource, PolicyConfig, WorkspaceConfig

MAX_CONFIG_BYTES = 64 * 1024
WORKSPACE_CONFIG = Path(".ax") / "config.json"

LayerT = TypeVar("LayerT", bound="WorkspaceConfig")
# User-only keys a workspace file is said to name in vain rather than refused for: a
# repository copying a user's config must not stop the session, nor be obeyed.
USER_ONLY_IGNORED = ("workerExtensions",)


@dataclass(frozen=True)
class DenyLists:
    """The deny lists a path check reads, as plain values."""

    protected_paths: tuple[str, ...] = ()
    secret_patterns: tuple[str, ...] = ()


NO_DENY_LISTS = DenyLists()


def workspace_config_path(workspace: Path) -> Path:
    return workspace / WORKSPACE_CONFIG


def load_path_rules(layout: StateLayout) -> PathRules:
    """The deny lists for path checks: none when neither config file exists, else load_config's.

    Both files are read through the same checks load_config makes, in its order,
    so a file that is there but unreadable fails the same way; a file that is
    there is then read again by load_config.
    """
    user_path = layout.config_file
    ws_path = workspace_config_path(layout.workspace)
    if (
        _read_layer_bytes(user_path, None) is None
        and _read_layer_bytes(ws_path, layout.workspace) is None
    ):
        return NO_DENY_LISTS
    return load_config(layout)


def load_config(layout: StateLayout) -> PolicyConfig:
    """The merged configuration for ``layout``'s workspace."""
    from .models import PolicyConfig, UserConfig, WorkspaceConfig

    user, user_source, _ = _read_layer(layout.config_file, UserConfig, "user", None)
    ws_path = workspace_config_path(layout.workspace)
    workspace, ws_source, warnings = _read_layer(
        ws_path, WorkspaceConfig, "workspace", layout.workspace
    )
    return PolicyConfig(
        provider=user.provider,
        model=user.model,
        base_url=user.base_url,
        max_steps=user.max_steps,
        context_budget=user.context_budget,
        instruction_fallbacks=user.instruction_fallbacks,
        mcp_servers=user.mcp_servers,
        research=user.research,
        worker_extensions=user.worker_extensions,
        protected_paths=_union(user.protected_paths, workspace.protected_paths),
        secret_patterns=_union(user.secret_patterns, workspace.secret_patterns),
        env_exclude_patterns=_union(user.env_exclude_patterns, workspace.env_exclude_patterns),
        blocked_hosts=_union(user.blocked_hosts, workspace.blocked_hosts),
        sources=[user_source, ws_source],
        warnings=warnings,
    )


def _union(first: list[str], second: list[str]) -> list[str]:
    return list(dict.fromkeys([*first, *second]))


def _hint(path: Path) -> str:
    return f"fix or remove {path}; ax never rewrites a configuration file"


def _read_layer_bytes(path: Path, confine_to: Path | None) -> bytes | None:
    """The layer file's bytes, None when it does not exist; refuses what load_config refuses."""
    hint = _hint(path)
    if confine_to is not None and os.path.lexists(path):
        real = Path(os.path.realpath(path))
        if not is_within(real, confine_to):
            raise UsageError(
                f"the workspace config {path} leads outside the workspace, to {real}", hint=hint
            )
    try:
        return read_capped(path, MAX_CONFIG_BYTES)
    except UnreadableFile as exc:
        raise UsageError(f"config {path} {exc.problem}", hint=hint) from None


def _read_layer(
    path: Path,
    model: type[LayerT],
    layer: Literal["user", "workspace"],
    confine_to: Path | None,
) -> tuple[LayerT, ConfigSource, list[str]]:
    """The layer, its source, and a warning for each user-only key a workspace named."""
    from pydantic import ValidationError

    from .models import ConfigSource

    hint = _hint(path)
    data = _read_layer_bytes(path, confine_to)
    if data is None:
        return model(), ConfigSource(layer=layer, path=str(path), present=False), []
    source = ConfigSource(
        layer=layer, path=str(path), present=True, sha256=hashlib.sha256(data).hexdigest()
    )
    try:
        document = jsonio.loads(data)
    except jsonio.JSONDecodeError as exc:
        raise UsageError(f"config {path} is not valid JSON: {exc}", hint=hint) from None
    if not isinstance(document, dict):
        raise UsageError(f"config {path} must be a JSON object", hint=hint)
    warnings: list[str] = []
    if layer == "workspace":
        for key in USER_ONLY_IGNORED:
            if key in document:
                del document[key]
                warnings.append(
                    f"config {path}: {key} ignored: only the user's config "
                    "(<state>/config.json) may name it"
                )
    try:
        return model.model_validate(document), source, warnings
    except ValidationError as exc:
        raise UsageError(describe_validation_error(exc, f"config {path}"), hint=hint) from None
