"""Model providers behind one contract (see base.py), and the one place they are built.

Nothing here imports ``anthropic`` or ``httpx``: each provider module imports
its SDK inside the code that needs it, so choosing the script provider, or
asking for ``--help``, never loads either.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from libcommon.errors import UsageError

from .base import (
    DEFAULT_MAX_TOKENS,
    STOP_REASONS,
    ContentBlock,
    Message,
    Provider,
    ProviderAborted,
    ProviderError,
    ProviderRequest,
    ProviderResponse,
    ScriptExhausted,
    StopReason,
    TextBlock,
    ToolResultBlock,
    ToolSchema,
    ToolUseBlock,
    Usage,
)
from .profiles import PROFILES

PROVIDER_NAMES = ("anthropic", "openai", *PROFILES, "script", "mesh-fake")

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "PROVIDER_NAMES",
    "STOP_REASONS",
    "ContentBlock",
    "Message",
    "Provider",
    "ProviderAborted",
    "ProviderError",
    "ProviderRequest",
    "ProviderResponse",
    "ScriptExhausted",
    "StopReason",
    "TextBlock",
    "ToolResultBlock",
    "ToolSchema",
    "ToolUseBlock",
    "Usage",
    "make_provider",
]


def make_provider(
    name: str,
    *,
    model: str | None,
    base_url: str | None,
    script: Path | None,
    environ: Mapping[str, str],
) -> Provider:
    """Build the named provider. Credentials come from ``environ`` only.

    A chat profile's base URL is ``base_url`` (a flag or the user config), else
    the profile's base-URL variable, else its default. Raises UsageError for an
    unknown name or a missing or misplaced option, and ProviderError when a
    credential the provider needs is not set.
    """
    if name == "script":
        from .script import ScriptProvider

        if script is None:
            raise UsageError("the script provider needs a script file", hint="pass --script FILE")
        if base_url is not None:
            raise UsageError("the script provider calls no server, so it takes no base URL")
        return ScriptProvider.from_file(script, model=model)
    if script is not None:
        raise UsageError(f"a script file is for the script provider, not {name}")
    if name == "mesh-fake":
        from .mesh_fake import MeshFakeProvider

        if base_url is not None:
            raise UsageError("the mesh-fake provider calls no server, so it takes no base URL")
        # The fake harness of ax-mesh: each message body is its script (docs/ax-mesh.md).
        return MeshFakeProvider(model=model)
    if name == "anthropic":
        from .anthropic import BASE_URL_VAR, AnthropicProvider

        if base_url is not None:
            raise UsageError(
                "the anthropic provider takes its base URL from the environment only",
                hint=f"export {BASE_URL_VAR}=URL",
            )
        return AnthropicProvider(model=model, environ=environ)
    if name == "openai":
        from .openai_responses import BASE_URL_VAR as OPENAI_BASE_URL_VAR
        from .openai_responses import OpenAIResponsesProvider

        if base_url is not None:
            raise UsageError(
                "the openai provider takes its base URL from the environment only",
                hint=f"export {OPENAI_BASE_URL_VAR}=URL",
            )
        return OpenAIResponsesProvider(model=model, environ=environ)
    profile = PROFILES.get(name)
    if profile is not None:
        from .openai_compat import OpenAICompatProvider

        base_url = (
            base_url
            or (environ.get(profile.base_url_var, "").strip() if profile.base_url_var else "")
            or profile.default_base_url
        )
        if not base_url:
            raise UsageError(
                f"the {name} provider needs the server's base URL",
                hint="pass --base-url http://127.0.0.1:8080/v1 (or set it in the user config)",
            )
        if not base_url.startswith(("http://", "https://")):
            raise UsageError(f"the base URL must start with http:// or https://: {base_url!r}")
        model = model or profile.default_model
        if not model:
            raise UsageError(
                f"the {name} provider needs a model name",
                hint="pass --model NAME (the name the server knows the model by)",
            )
        return OpenAICompatProvider(
            model=model, base_url=base_url, environ=environ, profile=profile
        )
    raise UsageError(
        f"unknown provider {name!r}",
        hint=f"choose one of: {', '.join(PROVIDER_NAMES)}",
    )
