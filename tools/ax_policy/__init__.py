"""ax-policy: trust, path validation, command review and the allow/ask/deny decision engine.

This module is the public face: other tools import only what it names.
"""
