"""The envelope every stored event carries, kept free of pydantic.

Readers import only this, so ``ax-log events`` starts without building the
event models.
"""

from __future__ import annotations

SCHEMA_VERSION = 1
ENVELOPE_KEYS = ("v", "seq", "ts", "session")
