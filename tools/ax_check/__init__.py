"""ax-check: typed verification: build/test/lint commands resolved from the project's own manifests.

This module is the public face: other tools import only what it names.
"""
