"""Which file and folder names hold secrets: the one rule every tool applies.

ax-policy decides on reads and writes of secret-named paths with it; ax-map lists
such files and never opens them. Names are compared case-insensitively, which only
ever widens the rule.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable

# Secret-named files, matched case-insensitively on a file or folder name.
SECRET_NAME_PATTERNS = (
    ".env*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.keystore",
    "*.jks",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".git-credentials",
    "credentials*",
)
# Folders whose whole content is secret (ssh keys, cloud credentials, keyrings).
SECRET_FOLDER_NAMES = frozenset({".ssh", ".aws", ".gnupg"})
# All the patterns as one expression: an inventory of 20,000 names asks once per name.
_ANY_SECRET_NAME = re.compile("|".join(fnmatch.translate(p) for p in SECRET_NAME_PATTERNS))


def secret_name_pattern(name: str) -> str | None:
    """The pattern of SECRET_NAME_PATTERNS that ``name`` (one path component) matches."""
    folded = name.casefold()
    if not _ANY_SECRET_NAME.match(folded):
        return None
    for pattern in SECRET_NAME_PATTERNS:
        if fnmatch.fnmatchcase(folded, pattern):
            return pattern
    return None


def secret_folder(parts: Iterable[str]) -> str | None:
    """The first of ``parts`` that names a folder of SECRET_FOLDER_NAMES, as written."""
    for part in parts:
        if part.casefold() in SECRET_FOLDER_NAMES:
            return part
    return None
