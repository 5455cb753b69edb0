"""ax-exec: managed execution: timeouts, verified tree kill, secret-free environments and the Linux sandbox.

This module is the public face: other tools import only what it names.
"""
