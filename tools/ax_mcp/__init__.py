"""ax-mcp: an MCP stdio server exposing ax's slate, checks and command review to other agents.

This module is the public face: other tools import only what it names.
"""
