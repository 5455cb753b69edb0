"""ax-slate: working memory: trail, notes, frame, recall, external slates and the review gate.

This module is the public face: other tools import only what it names.
"""
