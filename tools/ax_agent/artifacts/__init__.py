"""The documents pack (issue 25): read, render and validate DOCX and PDF.

A pure module: it imports nothing of the harness (no policy, log, seam or tool
code), so it can be reasoned about and tested on bytes alone. The model-facing
tools (read_document, render_document, inspect_pages) are thin wrappers above it
that do the workspace I/O, the events and the image channel.
"""
