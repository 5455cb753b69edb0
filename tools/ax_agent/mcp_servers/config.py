"""Which MCP servers a session may start, read from the user's config and the workspace's files.

The user's ``config.json`` declares servers under ``mcpServers``; they are the
user's own and start at once. A workspace may declare servers too, in
``.ax/mcp.json`` or in ``.mcp.json`` (Claude Code's project file), with the same
shape. A cloned repository must not be able to start a program, so such an
entry starts only after a person approves that exact entry: the sha256 of its
canonical JSON (with its name) is kept as a durable grant in the state root,
and an entry that changes is another identity, asked about again.

An entry is stdio (``command``, ``args``, ``env``) or streamable HTTP (``url``,
``headers``). Nothing secret is ever written in one: ``env`` names the
variables passed through from ax-agent's own environment (a list of names, or
``{"NAME": "${OTHER}"}`` as Claude Code writes it), and each header's value is
``${VAR}`` or one scheme word before it (``Bearer ${GITHUB_TOKEN}``), read from
the environment when the server starts. A literal value is refused, naming the
field, because a value in the file would be a secret in the file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, StringConstraints, ValidationError

from libcommon import jsonio
from libcommon.cliapp import describe_validation_error
from libcommon.contracts import Contract
from libcommon.errors import UsageError
from libcommon.paths import is_within

if TYPE_CHECKING:
    from ax_policy import PolicyConfig
    from libcommon.paths import StateLayout

# The workspace's own declarations, in the order read; a name the first declares wins.
WORKSPACE_FILES = (Path(".ax") / "mcp.json", Path(".mcp.json"))
MAX_WORKSPACE_FILE_BYTES = 64 * 1024
MAX_ARGS = 256
MAX_ARG_CHARS = 4096
MAX_ENV_NAMES = 64
MAX_HEADERS = 32
MAX_URL_CHARS = 2048

_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
_REFERENCE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]{0,127})\}$")
_HEADER_VALUE = re.compile(
    r"^(?:([A-Za-z][A-Za-z0-9-]{0,31}) )?\$\{([A-Za-z_][A-Za-z0-9_]{0,127})\}$"
)
_HEADER_NAME = r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$"

EnvName = Annotated[str, StringConstraints(pattern=_ENV_NAME)]
Source = Literal["user", "workspace"]


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("a NUL character cannot be passed to a program")
    return value


Text = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_ARG_CHARS), AfterValidator(_no_nul)
]
Arg = Annotated[str, StringConstraints(max_length=MAX_ARG_CHARS), AfterValidator(_no_nul)]


def _reference(value: str) -> str:
    if _REFERENCE.fullmatch(value) is None:
        raise ValueError(
            "a value here is ${VAR}, the name of a variable in ax-agent's environment; a "
            "literal value would be a secret in the file: set it in the environment instead"
        )
    return value


def _names_as_references(value: Any) -> Any:
    if isinstance(value, list) and all(isinstance(name, str) for name in value):
        return {name: "${" + name + "}" for name in value}
    return value


def _header_value(value: str) -> str:
    if _HEADER_VALUE.fullmatch(value) is None:
        raise ValueError(
            "a header's value is ${VAR} or one word before it ('Bearer ${TOKEN}'), read from "
            "ax-agent's environment; a literal value would be a secret in the file"
        )
    return value


def _http_url(value: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("an http:// or https:// URL with a host")
    if parts.username or parts.password:
        raise ValueError("credentials in the URL are refused; pass them in a header")
    return value


class StdioEntry(Contract):
    """A server ax-agent starts as a child process and speaks to over its stdin and stdout."""

    type: Literal["stdio"] = "stdio"
    command: Text
    args: Annotated[list[Arg], Field(max_length=MAX_ARGS)] = Field(default_factory=list)
    # A list of names is read as {NAME: "${NAME}"}: one shape to check, one error to give.
    env: Annotated[
        dict[EnvName, Annotated[str, AfterValidator(_reference)]],
        BeforeValidator(_names_as_references),
        Field(max_length=MAX_ENV_NAMES),
    ] = Field(default_factory=dict)

    def passed(self) -> dict[str, str]:
        """Each variable the child gets: its name there -> the name read here."""
        return {name: _name_in(reference) for name, reference in self.env.items()}


class HttpEntry(Contract):
    """A server reached over streamable HTTP."""

    type: Literal["http", "streamable-http"] = "http"
    url: Annotated[
        str, StringConstraints(min_length=1, max_length=MAX_URL_CHARS), AfterValidator(_http_url)
    ]
    headers: Annotated[
        dict[
            Annotated[str, StringConstraints(pattern=_HEADER_NAME)],
            Annotated[str, AfterValidator(_header_value)],
        ],
        Field(max_length=MAX_HEADERS),
    ] = Field(default_factory=dict)

    @property
    def host(self) -> str:
        from urllib.parse import urlsplit

        return urlsplit(self.url).hostname or ""


def _name_in(reference: str) -> str:
    match = _REFERENCE.fullmatch(reference)
    assert match is not None  # _reference validated it
    return match.group(1)


def header_parts(value: str) -> tuple[str | None, str]:
    """A validated header value's scheme word (or None) and the variable it reads."""
    match = _HEADER_VALUE.fullmatch(value)
    assert match is not None  # _header_value validated it
    return match.group(1), match.group(2)


Entry = StdioEntry | HttpEntry


@dataclass
class ServerSpec:
    """One declared server: where it came from, and either its entry or why it is unusable."""

    name: str
    source: Source
    # The file that declared it (the user's config.json, or the workspace's file).
    path: str
    entry: Entry | None
    # sha256 of {"name", "entry"} as canonical JSON: the identity a person approves.
    sha256: str
    problem: str | None = None
    notes: list[str] = field(default_factory=list)


def entry_sha256(name: str, raw: Any) -> str:
    canonical = json.dumps(
        {"name": name, "entry": raw}, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def parse_entry(name: str, raw: Any, where: str) -> Entry:
    """The entry, validated; UsageError names the file, the server and the field."""
    if not isinstance(raw, dict):
        raise UsageError(f"{where}: mcpServers.{name} must be a JSON object")
    kind = raw.get("type")
    if kind == "sse":
        raise UsageError(
            f"{where}: mcpServers.{name} field 'type': 'sse' is not supported",
            hint="use the server's streamable HTTP endpoint (type 'http')",
        )
    http = "url" in raw or kind in ("http", "streamable-http")
    model: type[Entry] = HttpEntry if http else StdioEntry
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise UsageError(describe_validation_error(exc, f"{where}: mcpServers.{name}")) from None


def user_servers(layout: StateLayout, config: PolicyConfig) -> list[ServerSpec]:
    """The user's servers; a bad entry is a UsageError (exit 2), as any bad config is."""
    where = f"config {layout.config_file}"
    return [
        ServerSpec(
            name=name,
            source="user",
            path=str(layout.config_file),
            entry=parse_entry(name, raw, where),
            sha256=entry_sha256(name, raw),
        )
        for name, raw in (config.mcp_servers or {}).items()
    ]


def workspace_servers(workspace: Path, taken: set[str]) -> tuple[list[ServerSpec], list[str]]:
    """The workspace's servers, and notes on what was ignored.

    A workspace's files are not the user's: a bad file or entry never stops the
    session, it is reported and that server is not started. A name the user
    already declared stays the user's.
    """
    from ax_policy import MAX_MCP_SERVER_NAME_CHARS, MAX_MCP_SERVERS, MCP_SERVER_NAME

    specs: list[ServerSpec] = []
    notes: list[str] = []
    for relative in WORKSPACE_FILES:
        path = workspace / relative
        document, problem = _read_workspace_file(path, workspace)
        if problem is not None:
            notes.append(problem)
        if document is None:
            continue
        for name, raw in document.items():
            if len(specs) >= MAX_MCP_SERVERS:
                notes.append(f"{path}: more than {MAX_MCP_SERVERS} servers; the rest ignored")
                break
            if len(name) > MAX_MCP_SERVER_NAME_CHARS or not re.fullmatch(MCP_SERVER_NAME, name):
                notes.append(
                    f"{path}: server name {name[:40]!r} ignored: letters, digits, '-' and "
                    f"single '_' only, at most {MAX_MCP_SERVER_NAME_CHARS} characters"
                )
                continue
            if name in taken:
                notes.append(f"{path}: server {name!r} ignored: the name is already declared")
                continue
            taken.add(name)
            spec = ServerSpec(name, "workspace", str(path), None, entry_sha256(name, raw))
            try:
                spec.entry = parse_entry(name, raw, str(path))
            except UsageError as exc:
                spec.problem = exc.message
            specs.append(spec)
    return specs, notes


def _read_workspace_file(path: Path, workspace: Path) -> tuple[dict[str, Any] | None, str | None]:
    if not os.path.lexists(path):
        return None, None
    real = Path(os.path.realpath(path))
    if not is_within(real, workspace):
        return None, f"{path} ignored: it leads outside the workspace, to {real}"
    try:
        with real.open("rb") as handle:
            data = handle.read(MAX_WORKSPACE_FILE_BYTES + 1)
    except OSError as exc:
        return None, f"{path} ignored: {exc.strerror or exc}"
    if len(data) > MAX_WORKSPACE_FILE_BYTES:
        return None, f"{path} ignored: larger than {MAX_WORKSPACE_FILE_BYTES} bytes"
    try:
        document = jsonio.loads(data)
    except jsonio.JSONDecodeError as exc:
        return None, f"{path} ignored: not valid JSON ({exc})"
    servers = document.get("mcpServers") if isinstance(document, dict) else None
    if not isinstance(servers, dict):
        return None, f"{path} ignored: it has no mcpServers object"
    return servers, None
