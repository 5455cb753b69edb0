"""Bounded context: token accounting, the model catalog, the budget and elision.

(A subpackage of its own, beside ``ax_agent.context``, which holds what a
session learns about its world at start.) The pure parts, ``elide`` above
all, take plain values and return plain values; ``window.ContextWindow`` is
the one stateful piece that the turn loop holds.
"""
