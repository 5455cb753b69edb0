"""ax-policy: trust, path validation, command review and the allow/ask/deny decision engine.

This module is the public face: other tools import only what it names
(``from ax_policy import decide, review_command``). The engine decides; it
never runs a command and never writes the event log.

Names are loaded on first use, so ``ax-policy --help`` does not pay for
pydantic and the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from libcommon.lazy import lazy_getattr

if TYPE_CHECKING:
    from .command_review import SYSTEM_BIN_DIRS, review_command
    from .config import load_config, workspace_config_path
    from .engine import (
        DELEGATE_ROLES,
        FACT_KINDS,
        DecisionContext,
        ToolFacts,
        decide,
        decide_request,
    )
    from .grants import (
        GRANTABLE_CLASSES,
        Grants,
        SessionGrants,
        add_durable_grant,
        list_durable_grants,
        revoke_durable_grant,
    )
    from .models import (
        DURABLE_EXTERNAL_TOOLS,
        MAX_MCP_SERVER_NAME_CHARS,
        MAX_MCP_SERVERS,
        MCP_SERVER_NAME,
        MCP_TOOL_NAME,
        CheckFact,
        CheckpointFact,
        CommandFact,
        CommandReview,
        ConfigSource,
        Decision,
        DecisionRequest,
        DeclaredFacts,
        DurableGrant,
        ExternalFact,
        GitReadFact,
        PathCheck,
        PathFacts,
        PolicyConfig,
        SandboxStatus,
        SessionGrant,
        SetupFact,
        TrustStatus,
        durable_external_eligible,
    )
    from .pathcheck import validate_path
    from .queries import check_path_in_workspace, review_in_workspace
    from .trust import check_trust, ensure_trusted, grant_trust, revoke_trust

# Each public name and the module that defines it.
_EXPORTS = {
    "SYSTEM_BIN_DIRS": "command_review",
    "review_command": "command_review",
    "load_config": "config",
    "workspace_config_path": "config",
    "DELEGATE_ROLES": "engine",
    "FACT_KINDS": "engine",
    "DecisionContext": "engine",
    "ToolFacts": "engine",
    "decide": "engine",
    "decide_request": "engine",
    "GRANTABLE_CLASSES": "grants",
    "Grants": "grants",
    "SessionGrants": "grants",
    "add_durable_grant": "grants",
    "list_durable_grants": "grants",
    "revoke_durable_grant": "grants",
    "DURABLE_EXTERNAL_TOOLS": "models",
    "MAX_MCP_SERVER_NAME_CHARS": "models",
    "MAX_MCP_SERVERS": "models",
    "MCP_SERVER_NAME": "models",
    "MCP_TOOL_NAME": "models",
    "durable_external_eligible": "models",
    "CheckFact": "models",
    "SetupFact": "models",
    "CheckpointFact": "models",
    "CommandFact": "models",
    "CommandReview": "models",
    "ConfigSource": "models",
    "Decision": "models",
    "DecisionRequest": "models",
    "DeclaredFacts": "models",
    "DurableGrant": "models",
    "ExternalFact": "models",
    "GitReadFact": "models",
    "PathCheck": "models",
    "PathFacts": "models",
    "PolicyConfig": "models",
    "SandboxStatus": "models",
    "SessionGrant": "models",
    "TrustStatus": "models",
    "validate_path": "pathcheck",
    "check_path_in_workspace": "queries",
    "review_in_workspace": "queries",
    "check_trust": "trust",
    "ensure_trusted": "trust",
    "grant_trust": "trust",
    "revoke_trust": "trust",
}

__all__ = [
    "DELEGATE_ROLES",
    "DURABLE_EXTERNAL_TOOLS",
    "FACT_KINDS",
    "GRANTABLE_CLASSES",
    "MAX_MCP_SERVERS",
    "MAX_MCP_SERVER_NAME_CHARS",
    "MCP_SERVER_NAME",
    "MCP_TOOL_NAME",
    "SYSTEM_BIN_DIRS",
    "CheckFact",
    "CheckpointFact",
    "CommandFact",
    "CommandReview",
    "ConfigSource",
    "Decision",
    "DecisionContext",
    "DecisionRequest",
    "DeclaredFacts",
    "DurableGrant",
    "ExternalFact",
    "GitReadFact",
    "Grants",
    "PathCheck",
    "PathFacts",
    "PolicyConfig",
    "SandboxStatus",
    "SessionGrant",
    "SessionGrants",
    "SetupFact",
    "ToolFacts",
    "TrustStatus",
    "add_durable_grant",
    "check_path_in_workspace",
    "check_trust",
    "decide",
    "decide_request",
    "durable_external_eligible",
    "ensure_trusted",
    "grant_trust",
    "list_durable_grants",
    "load_config",
    "review_command",
    "review_in_workspace",
    "revoke_durable_grant",
    "revoke_trust",
    "validate_path",
    "workspace_config_path",
]


__getattr__ = lazy_getattr(__name__, {name: f".{module}" for name, module in _EXPORTS.items()})
