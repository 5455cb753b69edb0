# Everyday tasks. `just --list` shows them.

# the test suite against the built wheel (CI runs `tox`: this plus lint)
test *args:
    tox -e test -- {{args}}

lint:
    tox -e lint

# benchmark figures: start-up, log appends, harness cost (not pass/fail)
bench *args:
    tox -e bench -- {{args}}

# regenerate completions/ from the installed tools
completions:
    tox exec -e test -- python scripts/completions.py

# the offline demo
demo:
    tox -e demo
