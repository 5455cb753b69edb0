"""ax-preview: managed dev servers with honest readiness, TTLs and a crash sweep.

This module is the public face: other tools import only what it names.
"""
