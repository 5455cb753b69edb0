#!/usr/bin/env bash
# The tools composed by hand on a scratch project: a failing test, checked, fixed with an
# undoable edit, checked again, and the report that says which file the passing check
# covers. Offline; everything lives in a temporary folder that is removed at the end.
set -euo pipefail

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export AX_STATE_DIR="$scratch/state"
ws="$scratch/calc"
session=demo
mkdir -p "$ws"
cat > "$ws/pyproject.toml" <<'TOML'
[project]
name = "calc"
version = "0.1.0"
TOML
cat > "$ws/calc.py" <<'PY'
def add(a, b):
    return a - b
PY
cat > "$ws/test_calc.py" <<'PY'
from calc import add


def test_add():
    assert add(2, 3) == 5
PY

if [ -t 2 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
step() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain" >&2; }

step "ax-check detect: what this project can check, read from its manifest"
ax-check detect -C "$ws"

step "ax-log: the session starts"
echo "{\"type\": \"session.started\", \"workspace\": \"$ws\"}" | ax-log append -C "$ws" --session "$session" >/dev/null

step "ax-check test: the test fails (exit 1), recorded in the log"
ax-check test -C "$ws" --session "$session" || echo "ax-check exited $? (failed, as expected)" >&2

step "ax-policy: may this file be written without a question?"
ax-policy check-path -C "$ws" --write calc.py | python3 -c 'import json,sys; d=json.load(sys.stdin); print("ok:", d["ok"])'

step "ax-log snapshot, edit, ax-log mutated: an undoable edit"
ax-log snapshot -C "$ws" --session "$session" --call fix-1 calc.py >/dev/null
sed -i 's/a - b/a + b/' "$ws/calc.py"
ax-log mutated -C "$ws" --session "$session" --call fix-1 calc.py >/dev/null

step "ax-check test: the test passes"
ax-check test -C "$ws" --session "$session"

echo '{"type": "session.ended", "reason": "demo finished"}' | ax-log append -C "$ws" --session "$session" >/dev/null

step "ax-log events | ax-report: the fixed file is CHECKED"
ax-log events -C "$ws" --session "$session" | ax-report

step "ax-report diff: the session's change"
ax-report diff -C "$ws" --session "$session"
