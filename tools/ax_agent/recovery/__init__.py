"""Typed recovery: the failure catalogue, deterministic classification, the repair ledger.

``catalogue`` is the data (one entry per class), ``classify`` reads a failure's
class from its event alone, ``render`` puts the entry where the model needs it
(failing ``run_check`` results, gate refusals), and ``ledger`` derives each
repair's outcome from the events, never from a record of it.
"""
