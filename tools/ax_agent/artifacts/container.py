"""OOXML containers, in memory only: capped reading and deterministic writing.

Nothing is ever extracted to disk, so a hostile entry name has no file system to
escape into; names are still validated, because a reader that trusts one would
mistake ``../x`` or ``a\\b`` for a part. Every entry is budgeted by the larger of
its compressed and its declared size (a stored entry is materialised at its
compressed size, and a deflated one can lie about its declared size), and reads
stop at the budget whatever the header claimed.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping

from .errors import (
    ZIP_ENTRY_MAX_BYTES,
    ZIP_MAX_ENTRIES,
    ZIP_NAME_MAX_CHARS,
    ZIP_TOTAL_MAX_BYTES,
    Unsupported,
)

ZIP_MAGIC = b"PK\x03\x04"
# The fixed stamp and level of every archive the pack writes (the DOS epoch).
FIXED_ZIP_TIME = (1980, 1, 1, 0, 0, 0)
FIXED_ZIP_LEVEL = 6
CONTENT_TYPES = "[Content_Types].xml"


class Archive:
    """A zip archive held in memory, its entries checked before any is read."""

    def __init__(self, data: bytes) -> None:
        try:
            self._zip = zipfile.ZipFile(io.BytesIO(data))
            infos = self._zip.infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError):
            raise Unsupported("malformed", "the archive's directory does not parse") from None
        if len(infos) > ZIP_MAX_ENTRIES:
            raise Unsupported(
                "too-many-entries", f"the archive has more than {ZIP_MAX_ENTRIES} entries"
            )
        self._infos: dict[str, zipfile.ZipInfo] = {}
        total = 0
        for info in infos:
            if not valid_entry_name(info.filename):
                raise Unsupported(
                    "bad-entry-name", "an entry name is absolute, climbs out or is malformed"
                )
            if info.filename in self._infos:
                raise Unsupported("bad-entry-name", "two entries have the same name")
            if info.flag_bits & 0x1:
                raise Unsupported("encrypted", "an entry of the archive is encrypted")
            size = max(info.compress_size, info.file_size)
            if size > ZIP_ENTRY_MAX_BYTES:
                raise Unsupported("too-large", f"an entry is over {ZIP_ENTRY_MAX_BYTES} bytes")
            total += size
            if total > ZIP_TOTAL_MAX_BYTES:
                raise Unsupported(
                    "too-large", f"the entries add up to over {ZIP_TOTAL_MAX_BYTES} bytes"
                )
            self._infos[info.filename] = info

    def names(self) -> list[str]:
        return list(self._infos)

    def has(self, name: str) -> bool:
        return name in self._infos

    def read(self, name: str, role: str) -> bytes:
        """The bytes of entry ``name`` (``role`` says what it is, for a reason)."""
        info = self._infos.get(name)
        if info is None:
            raise Unsupported("malformed", f"the {role} the package names is missing")
        budget = max(info.compress_size, info.file_size)
        try:
            with self._zip.open(info) as handle:
                data = handle.read(budget + 1)
        except (zipfile.BadZipFile, NotImplementedError, ValueError, EOFError, OSError):
            raise Unsupported("malformed", f"the {role} does not decompress") from None
        except RuntimeError:
            raise Unsupported("encrypted", f"the {role} is encrypted") from None
        if len(data) > budget:
            raise Unsupported("too-large", f"the {role} inflates past its declared size")
        return data


def valid_entry_name(name: str) -> bool:
    """Whether ``name`` is a plain relative path inside an archive."""
    if not name or len(name) > ZIP_NAME_MAX_CHARS:
        return False
    if "\\" in name or "\x00" in name or name.startswith("/") or ":" in name.split("/")[0]:
        return False
    if any(ord(char) < 0x20 for char in name):
        return False
    return all(part not in ("", ".", "..") for part in name.rstrip("/").split("/"))


def write_archive(entries: Mapping[str, bytes]) -> bytes:
    """A zip of ``entries`` whose bytes depend on nothing else.

    The content types part first (readers expect it there), the rest sorted by name,
    every entry stamped ``FIXED_ZIP_TIME``, deflated at ``FIXED_ZIP_LEVEL``, with fixed
    attributes, so the same entries give the same sha256.
    """
    order = sorted(entries, key=lambda name: (name != CONTENT_TYPES, name))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in order:
            info = zipfile.ZipInfo(name, date_time=FIXED_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3
            info.external_attr = 0o100644 << 16
            archive.writestr(info, entries[name], compresslevel=FIXED_ZIP_LEVEL)
    return buffer.getvalue()
