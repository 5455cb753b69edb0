"""Which git command lines are reads: a positive proof over the argv, never a pattern of harm.

A tool that reads the repository through git declares the exact argvs it will run
(``gitRead``). The engine allows them only when every word is proven harmless: the
subcommand is one that cannot change a ref, the index, a file or a remote; each
option is on that subcommand's list (``--output=`` is on none: it writes a file);
and each other word is a ref spelled ``HEAD`` or ``refs/…``. Anything else, however
innocent it looks, denies: the harness composes these argvs, so a word it did not
plan for is a tool that changed, and that is a person's to review.
"""

from __future__ import annotations

import re

# Each read subcommand, its exact options, and the options that take a value
# (``--name=value``). The values are formats, counts and sort keys: none names a file.
_EXACT: dict[str, frozenset[str]] = {
    "status": frozenset(
        {
            "--porcelain=v2",
            "-z",
            "--branch",
            "--show-stash",
            "--no-renames",
            "--untracked-files=all",
            "--untracked-files=normal",
            "--untracked-files=no",
            "--ignore-submodules=all",
        }
    ),
    # log prints commits; --no-show-signature keeps a configured signature check (gpg,
    # a program) from running, --no-color and --no-decorate keep the output plain.
    "log": frozenset(
        {"-z", "--no-show-signature", "--no-color", "--no-decorate", "--walk-reflogs"}
    ),
    "for-each-ref": frozenset(),
    "rev-parse": frozenset(
        {
            "--is-inside-work-tree",
            "--is-bare-repository",
            "--absolute-git-dir",
            "--show-toplevel",
            "--verify",
            "-q",
        }
    ),
}
_VALUED: dict[str, tuple[str, ...]] = {
    "status": (),
    "log": ("--format=", "--max-count=", "--date="),
    "for-each-ref": ("--format=", "--count=", "--sort="),
    "rev-parse": (),
}
# A ref the harness names: HEAD (optionally peeled to its commit) or a full ref name.
_REF = re.compile(r"^(HEAD(\^\{commit\})?|refs/[A-Za-z0-9._/-]{1,200})$")


def git_read_refusal(argv: list[str]) -> str | None:
    """Why ``argv`` (the words after ``git``) is not a proven read; None when it is."""
    if not argv:
        return "an empty git command"
    subcommand, *words = argv
    if subcommand not in _EXACT:
        return f"'git {subcommand}' is not a read ax knows (reads: {', '.join(sorted(_EXACT))})"
    for word in words:
        if word in _EXACT[subcommand] or word.startswith(_VALUED[subcommand]):
            continue
        if word.startswith("-"):
            return f"'git {subcommand}' option {word!r} is not on its list of read options"
        if "/." in word or ".." in word or not _REF.match(word):
            return f"'git {subcommand}' word {word!r} is not a ref ax names (HEAD or refs/…)"
    return None
