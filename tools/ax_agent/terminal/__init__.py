"""The interactive terminal: ``ax-agent`` with no prompt, on a terminal.

A consumer of the same runtime as the headless path (one session, one
``run_turn`` per line). ``screen`` decides what bytes a stream may carry,
``status`` owns every cursor movement, ``render`` draws the log's events,
``choices`` and ``approve`` ask approval questions, ``commands`` holds the
slash commands and ``repl`` ties them into the prompt loop.
"""
