"""The child's environment: the parent's, minus anything named like a secret or shell code.

A variable is removed when its name matches a deny pattern (case-insensitive
shell globs; the defaults catch KEY, SECRET, TOKEN, PASSWORD and CREDENTIAL
anywhere in the name). A floor of variables that programs need to work is
never removed, and proxy settings always pass so commands behind a proxy keep
working. Values are not inspected: a proxy URL with embedded credentials passes
as it is (documented in docs/ax-exec.md).

The variables a shell reads as code or as options are removed too
(``SHELL_CODE_VARIABLES`` and exported functions, ``BASH_FUNC_*``): a command
ax-policy proved read-only runs as ``bash --noprofile --norc -c STRING``, and
the proof holds only if that bash runs nothing the string does not show and
expands it with default options. ``BASH_ENV`` names a file bash runs first,
``BASH_FUNC_ls%%`` replaces ``ls``, ``SHELLOPTS``/``BASHOPTS`` turn on options
such as ``xtrace`` (which expands ``PS4``), ``dotglob``, ``nocaseglob`` or
``globstar``, ``GLOBIGNORE`` changes what a glob matches, ``CDPATH`` changes
where ``cd`` goes, and ``ENV``, ``ZDOTDIR`` and ``PROMPT_COMMAND`` name code
other shells (sh, zsh) or interactive ones run.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

DEFAULT_DENY_PATTERNS: tuple[str, ...] = (
    "*KEY*",
    "*SECRET*",
    "*TOKEN*",
    "*PASSWORD*",
    "*CREDENTIAL*",
)
FLOOR: frozenset[str] = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "LC_ALL",
        "LC_CTYPE",
        "LC_MESSAGES",
        "TERM",
        "TZ",
        "TMPDIR",
        "PWD",
    }
)
PROXY_NAMES: frozenset[str] = frozenset(
    {"HTTP_PROXY", "HTTPS_PROXY", "FTP_PROXY", "ALL_PROXY", "NO_PROXY"}
)
SHELL_CODE_VARIABLES: frozenset[str] = frozenset(
    {
        "BASH_ENV",
        "ENV",
        "SHELLOPTS",
        "BASHOPTS",
        "PS4",
        "PROMPT_COMMAND",
        "ZDOTDIR",
        "GLOBIGNORE",
        "CDPATH",
    }
)
# bash imports a function from every variable named BASH_FUNC_<name>%%.
EXPORTED_FUNCTION_PREFIX = "BASH_FUNC_"
# Marks every process of one run, so the tree scan can find descendants that
# were re-parented or started their own session (see proctree.py).
RUN_MARKER = "AX_EXEC_RUN"


@dataclass(frozen=True)
class CleanEnvironment:
    variables: dict[str, str]
    removed: list[str]


def _kept_always(name: str) -> bool:
    upper = name.upper()
    return upper in FLOOR or upper in PROXY_NAMES


def _denied(name: str, patterns: Iterable[str]) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern.upper()) for pattern in patterns)


def _shell_code(name: str) -> bool:
    upper = name.upper()
    return upper in SHELL_CODE_VARIABLES or upper.startswith(EXPORTED_FUNCTION_PREFIX)


def clean_environment(
    parent: Mapping[str, str],
    extra_patterns: Iterable[str] = (),
    overrides: Mapping[str, str] | None = None,
) -> CleanEnvironment:
    """The child environment and the names that were removed (never their values).

    ``overrides`` are set last and are not filtered: a caller that names a
    variable explicitly has decided to pass it.
    """
    patterns = (*DEFAULT_DENY_PATTERNS, *extra_patterns)
    variables: dict[str, str] = {}
    removed: list[str] = []
    for name, value in parent.items():
        if name == RUN_MARKER:
            continue
        if _shell_code(name) or (not _kept_always(name) and _denied(name, patterns)):
            removed.append(name)
            continue
        variables[name] = value
    variables.update(overrides or {})
    return CleanEnvironment(variables=variables, removed=sorted(removed))
