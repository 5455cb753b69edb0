"""ax-report: the session report: a pure function from events to JSON and Markdown.

This module is the public face: other tools import only what it names.
"""
