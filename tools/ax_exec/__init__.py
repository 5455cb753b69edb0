"""ax-exec: managed execution with verified tree kill, clean environments and a sandbox.

This module is the public face: other tools import only what it names.
"""
