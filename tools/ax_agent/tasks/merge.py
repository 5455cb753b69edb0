"""A three-way merge of three byte strings with ``git merge-file``, outside any repository.

The one git command here is ``merge-file -p`` over three files written to a fresh
temporary folder: it reads no repository, config of a repository, index or ref,
and writes nothing but its standard output. That is why ``apply_task_changes``,
which reaches git only through this module, is decided as the writes it declares
and not as a git read (the registry guard in tests/agent/tools/test_git_policy.py
pins both this module's single command and that exemption). A conflict is reported
(its regions, bounded), never resolved.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from libcommon.errors import OperationFailed
from libcommon.git import GIT_WRITE_TIMEOUT_S, run_git

# Conflicted text shown for one file a merge could not resolve (the rest is counted).
CONFLICT_SHOWN_CHARS = 4000
MERGE_LABELS = ("workspace", "base", "task")
# merge-file exits with the number of conflicts, capped here; above it is an error.
_MAX_CONFLICT_STATUS = 127


@dataclass(frozen=True)
class Merged:
    data: bytes
    conflicts: int

    def shown(self) -> str:
        """The conflicted regions, up to ``CONFLICT_SHOWN_CHARS``."""
        out: list[str] = []
        inside = False
        for line in self.data.decode("utf-8", "replace").splitlines():
            if line.startswith("<<<<<<< "):
                inside = True
            if inside:
                out.append(line)
            if line.startswith(">>>>>>> "):
                inside = False
        text = "\n".join(out)
        if len(text) > CONFLICT_SHOWN_CHARS:
            text = text[:CONFLICT_SHOWN_CHARS] + f"\n… ({len(text) - CONFLICT_SHOWN_CHARS} more)"
        return text


def three_way(ours: bytes, base: bytes, theirs: bytes, environ: Mapping[str, str]) -> Merged:
    """``git merge-file -p`` of (workspace, base, task); OperationFailed when git cannot."""
    with tempfile.TemporaryDirectory(prefix="ax-merge-") as folder:
        names = []
        for label, data in zip(MERGE_LABELS, (ours, base, theirs), strict=True):
            path = Path(folder) / label
            path.write_bytes(data)
            names.append(str(path))
        labels = [arg for label in MERGE_LABELS for arg in ("-L", label)]
        done = run_git(
            Path(folder),
            ["merge-file", "-p", *labels, *names],
            environ,
            timeout_s=GIT_WRITE_TIMEOUT_S,
        )
    if done is None or done.truncated or not 0 <= done.returncode <= _MAX_CONFLICT_STATUS:
        raise OperationFailed("git merge-file could not merge it")
    return Merged(done.stdout, done.returncode)
