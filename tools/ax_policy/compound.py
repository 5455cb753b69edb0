"""Shell wrappers (``bash -lc SCRIPT`` and its kin) and ``cd`` in a reviewed command.

A command often arrives as an argv that hands a script to a shell
(``bash -lc "ls && pwd"``, the form Codex and others send). The review proves
such a command read-only only in one shape: a shell from ``SHELLS`` named by
its bare name, then exactly ``-c`` or ``-lc``, then the script as one word and
nothing after it (further words would become the script's ``$0``, ``$1``…).
Any other option (``-e``, ``-x``, ``-i``, ``--rcfile``, ``-O``…) asks. The
script is then reviewed as a command string of its own, with the same rules,
at most ``MAX_SHELL_NESTING`` shells deep.

What the shell runs before the script is the one thing the script's review
cannot see: its startup files. ``-l`` makes a login shell, which reads
``/etc/profile`` and the home folder's login files; ``zsh`` reads
``~/.zshenv`` and some ``bash`` builds read ``~/.bashrc`` even without
``-l``. Those files are the system's and the
person's own, and are trusted like the binaries under /usr/bin, with one
condition checked here: none of them may be writable by ax's own tools, which
write only inside the workspace. So a wrapper that reads startup files asks
when ``/etc`` or the home folder is inside the workspace, or when one of the
home's startup files resolves into it (a dotfiles repository linked into the
home and opened as the workspace).

The same startup files can change how the script itself is read: set options
(``nullglob``, ``failglob``, ``nocaseglob``, ``dotglob``, ``globstar``,
``extglob``), ``CDPATH``, or define functions named like commands (rvm and
autoenv replace ``cd`` with one that runs files from the folder it enters).
So inside a wrapper that reads startup files (``reads_startup_files``), and in
everything nested in it, globs and ``cd`` ask.

``cd DIR`` is the one builtin a sequence may use: it changes the folder of the
commands after it. ``cd_operand`` accepts it only as ``cd [-L|-P]... [--] DIR``
with exactly one operand that is not ``-`` (the previous folder), does not start
with ``~`` or ``+`` (the home folder, zsh's folder stack), has no ``..``
component and is not a glob; the review then checks that DIR is a folder inside
the workspace.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from libcommon.paths import is_within

from .shellwords import NotSimple, Word

SHELLS = frozenset({"bash", "sh", "dash", "zsh"})
MAX_SHELL_NESTING = 2

_SHAPE = "only `{shell} -c SCRIPT` and `{shell} -lc SCRIPT` are reviewed"

# The home folder's startup files each shell reads for `-c` (False) and `-lc`
# (True). bash's login files usually source ~/.bashrc, and a bash built with
# SSH_SOURCE_BASHRC (Debian's) reads it for `-c` too when it believes sshd
# started it, so ~/.bashrc is checked for every bash.
_HOME_FILES: dict[tuple[str, bool], tuple[str, ...]] = {
    ("bash", False): (".bashrc",),
    ("bash", True): (".bash_profile", ".bash_login", ".profile", ".bashrc", ".bash_logout"),
    ("sh", False): (),
    ("sh", True): (".profile",),
    ("dash", False): (),
    ("dash", True): (".profile",),
    ("zsh", False): (".zshenv",),
    ("zsh", True): (".zshenv", ".zprofile", ".zlogin", ".zlogout"),
}


@dataclass(frozen=True)
class ShellCall:
    """``SHELL -c SCRIPT`` or ``SHELL -lc SCRIPT``."""

    shell: str
    login: bool
    script: str

    @property
    def spelled(self) -> str:
        return f"{self.shell} {'-lc' if self.login else '-c'}"


def shell_call(words: list[Word]) -> ShellCall | None:
    """The shell call ``words`` make; None when they do not start with a shell's bare name.

    Raises NotSimple when they do but are not in the one reviewed shape.
    """
    first = words[0]
    if first.quoted or first.text not in SHELLS:
        return None
    shell = first.text
    shape = _SHAPE.format(shell=shell)
    if len(words) < 2 or not words[1].text.startswith("-"):
        raise NotSimple(
            f"{shell} without -c runs a script from a file or its standard input, which "
            f"the review cannot see; {shape}"
        )
    flag = words[1].text
    if words[1].quoted or flag not in ("-c", "-lc"):
        raise NotSimple(f"{shell} is given {flag}; {shape}")
    if len(words) < 3:
        raise NotSimple(f"{shell} {flag} is given no script")
    if len(words) > 3:
        raise NotSimple(f"words after the script of {shell} {flag} become its $0, $1, …; {shape}")
    return ShellCall(shell=shell, login=flag == "-lc", script=words[2].text)


def reads_startup_files(call: ShellCall) -> bool:
    """Whether ``call`` runs startup files from the home folder before its script."""
    return bool(_HOME_FILES[(call.shell, call.login)])


_CD_OPTIONS = frozenset({"-L", "-P"})


def cd_operand(words: list[Word]) -> str:
    """The folder ``cd`` is given in ``words``; NotSimple when it is not the one reviewed shape."""
    args = words[1:]
    index = 0
    while index < len(args) and args[index].text in _CD_OPTIONS and not args[index].quoted:
        index += 1
    ended = index < len(args) and args[index].text == "--"
    operands = args[index + 1 :] if ended else args[index:]
    shape = "only cd [-L|-P] [--] DIR with one folder is reviewed"
    if len(operands) != 1:
        raise NotSimple(f"cd is given {len(operands)} operands; {shape}")
    operand = operands[0]
    text = operand.text
    if operand.glob:
        raise NotSimple(f"cd is given the glob {text!r}; {shape}")
    if text == "-" or (text.startswith("-") and not ended):
        raise NotSimple(f"cd {text} goes to the previous folder or is an option; {shape}")
    if not text or text[0] in "~+":
        raise NotSimple(f"cd {text!r} names the home folder, a folder stack entry or nothing")
    if ".." in text.split("/"):
        raise NotSimple(
            f"cd {text} climbs with .., which bash applies to the logical folder name before "
            "links; name the folder from where the command starts"
        )
    return text


def startup_problem(call: ShellCall, workspace: Path, home: Path) -> str | None:
    """Why the startup files ``call`` reads could have been written by ax; None when not."""
    names = _HOME_FILES[(call.shell, call.login)]
    if not names:
        return None
    reads = f"{call.spelled} first runs its startup files"
    if is_within(Path("/etc"), workspace):
        return f"{reads} from /etc, which is inside the workspace"
    if is_within(home, workspace):
        return f"{reads} from the home folder {home}, which is inside the workspace"
    for name in names:
        path = home / name
        real = Path(os.path.realpath(path))
        if is_within(real, workspace):
            return f"{reads}, and {path} resolves into the workspace ({real})"
    return None
