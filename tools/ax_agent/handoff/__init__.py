"""Fresh-session handoff (issue 26): a session hands its work to a new one, and why.

``records`` reads what the log says (the pending purpose, the entry, the saved state,
a claimed kickoff) from events alone; ``snapshot`` builds what a successor adopts and
its kickoff text (the project's template only in a trusted workspace); ``flow`` does
it: the transfer on the old side, adoption, pauses and ``/resume`` on the new side,
and the failover instruction that asks a stalled session to go on.
"""
