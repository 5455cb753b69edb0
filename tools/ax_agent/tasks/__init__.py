"""The task DAG: per-task state as a pure fold over (plan, events), and the scheduler gate.

``events`` defines what the fold reads (the task events of docs/events.md),
``fold`` derives each task's state, ``gate`` decides whether a group of
delegated tasks may be spawned, all or nothing.
"""
