"""ax-agent: the coding agent: the turn loop, providers, model-facing tools, approvals and resume.

This module is the public face: other tools import only what it names.
"""
