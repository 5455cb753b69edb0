"""Property: any sequence of recorded edits, undone with --all, gives back the starting tree."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ax_log import record_mutations, snapshot_paths, undo
from libcommon.paths import state_layout

NAMES = ["a.txt", "b.txt", "sub/c.txt", "sub/deeper/d.txt"]

edits = st.lists(
    st.tuples(st.sampled_from(NAMES), st.one_of(st.none(), st.binary(max_size=64))),
    min_size=1,
    max_size=12,
)


def tree(root: Path) -> dict[str, bytes | None]:
    """Every file and folder under ``root``: files with their bytes, folders as None."""
    found: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        found[path.relative_to(root).as_posix()] = None if path.is_dir() else path.read_bytes()
    return found


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(initial=st.sets(st.sampled_from(NAMES[:3])), steps=edits)
def test_undo_all_restores_the_starting_tree(
    initial: set[str], steps: list[tuple[str, bytes | None]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        for name in initial:
            (workspace / name).parent.mkdir(parents=True, exist_ok=True)
            (workspace / name).write_bytes(f"initial {name}".encode())
        before = tree(workspace)
        layout = state_layout(workspace, environ={"AX_STATE_DIR": str(Path(tmp) / "state")})
        for number, (name, data) in enumerate(steps):
            shots = snapshot_paths(layout, "s", [name], f"c{number}")
            target = workspace / name
            if data is None:
                target.unlink(missing_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            record_mutations(layout, "s", [name], f"c{number}", {name: shots[0]})
        outcome = undo(layout, "s", everything=True)
        assert outcome.ok, outcome.event["refused"]
        assert tree(workspace) == before
