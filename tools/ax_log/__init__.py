"""ax-log: the append-only session event log, content-addressed snapshots and undo.

This module is the public face: other tools import only what it names.
"""
