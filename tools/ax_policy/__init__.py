"""ax-policy: trust, path validation, command review and the allow/ask/deny decision engine.

This module is the public face: other tools import only what it names.
The engine decides; it never runs a command and never writes the event log.
"""

from .command_review import SYSTEM_BIN_DIRS, review_command
from .config import load_config, workspace_config_path
from .engine import DecisionContext, ToolFacts, decide, decide_request
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
    CheckFact,
    CommandFact,
    CommandReview,
    ConfigSource,
    Decision,
    DecisionRequest,
    DeclaredFacts,
    DurableGrant,
    ExternalFact,
    PathFacts,
    PolicyConfig,
    SandboxStatus,
    SessionGrant,
    TrustStatus,
)
from .pathcheck import validate_path
from .trust import check_trust, ensure_trusted, grant_trust, revoke_trust

__all__ = [
    "DURABLE_EXTERNAL_TOOLS",
    "GRANTABLE_CLASSES",
    "SYSTEM_BIN_DIRS",
    "CheckFact",
    "CommandFact",
    "CommandReview",
    "ConfigSource",
    "Decision",
    "DecisionContext",
    "DecisionRequest",
    "DeclaredFacts",
    "DurableGrant",
    "ExternalFact",
    "Grants",
    "PathFacts",
    "PolicyConfig",
    "SandboxStatus",
    "SessionGrant",
    "SessionGrants",
    "ToolFacts",
    "TrustStatus",
    "add_durable_grant",
    "check_trust",
    "decide",
    "decide_request",
    "ensure_trusted",
    "grant_trust",
    "list_durable_grants",
    "load_config",
    "review_command",
    "revoke_durable_grant",
    "revoke_trust",
    "validate_path",
    "workspace_config_path",
]
