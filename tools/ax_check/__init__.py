"""ax-check: typed verification: resolve build/test/lint commands from the project's own manifests and run them.

This module is the public face: other tools import only what it names.
"""
