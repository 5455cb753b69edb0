# Everyday tasks. `just --list` shows them.

# the test suite against the built wheel, but for the tests marked slow
test *args:
    tox -e test -- -m "not slow" {{args}}

# every test, the slow ones included (CI runs `tox`: this plus lint)
test-all *args:
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
