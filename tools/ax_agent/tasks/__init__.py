"""The task DAG: per-task state as a pure fold over (plan, events), and the scheduler gate.

``fold`` derives each task's state from the task events (their contracts are
ax-log's, docs/events.md), ``gate`` decides whether a group of delegated
tasks may be spawned, all or nothing.
"""
