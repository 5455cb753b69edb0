"""Git for a person and for the model: the repository read through harness-named views
(``repo``), a deliberate commit (``commit``) and a push bound to what was observed (``push``),
and the flows the terminal and the CLI run them through (``delivery``)."""
