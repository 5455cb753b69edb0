"""Connections to trackers and code hosts, and the operation ledger around every call.

The store-backed tools call ``gateway.invoke`` (``connections.invoke``), ``gateway.get``
(``operations.get``) and ``gateway.recover`` (a restarted seat's unknown operations);
the store implements ``ledger.Ledger``. A new kind (Linear, GitHub) implements
``base.Connection`` and joins ``KINDS``.
"""

from __future__ import annotations

from .file_tracker import KIND as FILE_TRACKER_KIND
from .file_tracker import FileTracker

# Connection kinds by the name a person configures, each built by ``from_config``.
KINDS = {FILE_TRACKER_KIND: FileTracker}
