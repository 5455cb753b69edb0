"""The curated read-only executables: for each, the flags it may be given and how it parses them.

Flags are allowed, never denied: a flag missing from an executable's table
makes the command ask. That is what keeps ``find -exec``, ``sort -o``,
``rg --pre`` or a GNU long-option abbreviation such as ``sort --comp=sh`` out
of the read-only set without anyone having to remember them.

Knowing a flag is not enough: which word is its value and which is an operand
is decided by the binary's own parser, and the allowlisted ones differ. Each
spec names its grammar, checked against the real binaries by
tests/policy/test_grammar.py:

- ``getopt``: GNU getopt_long (coreutils, grep, diff, cmp, file, strings, hexdump;
  not echo and which, whose operands are text).
  Short options cluster (``-rn``); one that needs a value takes the rest of its
  word or else the next word; an optional value is only ever attached, so
  ``od -w FILE`` is ``-w`` and the operand FILE while ``od -w32`` is a width.
  Long options take ``--name=value``, or the next word when the value is
  required. Options may follow operands (GNU permutes them), and since
  POSIXLY_CORRECT in the environment makes those words operands instead, the
  review checks them both ways.
- ``clap``: ripgrep's parser. As getopt, except that a value attached to a short
  option loses a leading ``=``: ``rg -f=FILE`` and ``rg -if=FILE`` read FILE.
  ripgrep 13 (clap) strips every leading ``=`` of a value, long options too,
  ripgrep 14 (lexopt) one; the review checks both readings.
- ``tree``: a letter that needs a value takes the NEXT word and the rest of its
  cluster is still read as letters, so ``tree -Io x FILE`` is ``-I x -o FILE``;
  ``-L`` also takes attached digits in tree 2.1.3 and later.
- ``jq``: a word is an option only when ``-`` is followed by a letter or ``-``;
  short options are letters without values, long ones take their values from
  the following words and never from ``=``.

Left out on purpose: ``git`` (its config, pager, hooks and fsmonitor can run
code), interpreters, pagers and editors (shell escapes), ``env``/``printenv``
(secrets), ``xargs``/``tee``/``awk`` (run or write), ``yes`` (never ends), and
every flag that writes a file, runs a program, reads a list of files or
arguments from a file, follows links (``-L``; grep -R and rg -L are the
exception, ``follows_links``: the review walks what they follow) or never ends
(``tail -f``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

# What a flag's value or an operand is, for checking it.
#   count: a number (optionally signed, with a unit suffix: 20, +5, 1K)
#   text:  free text (a pattern, a format); never treated as a path
#   path:  must resolve inside the workspace and not be secret-named
#   when:  always | never | auto
ValueKind = Literal["count", "text", "path", "when"] | frozenset[str]

# How the operands (the non-flag words) are read.
#   paths:          every operand is a path
#   text:           operands are free text (echo, basename)
#   none:           no operands at all
#   pattern-paths:  the first operand is a pattern unless a pattern flag gave it; the rest are paths
#   date-format:    at most one operand and it must start with "+"
OperandRule = Literal["paths", "text", "none", "pattern-paths", "date-format"]

# How the binary splits its words into options, values and operands (see above).
Grammar = Literal["getopt", "clap", "tree", "jq"]


@dataclass(frozen=True)
class ObsoleteCount:
    """A count given as the first word (``head -20``, ``tail +5``), read as its binary reads it."""

    # Every first word the binary takes as this option rather than as a file.
    syntax: re.Pattern[str]
    # The ones that only read; any other match asks, with ``refused`` as the reason.
    allowed: re.Pattern[str]
    refused: str


@dataclass(frozen=True)
class FolderReads:
    """The binary opens the files inside folder operands and follows symlinks there (diff)."""

    # Flags that make it descend into subfolders.
    recursive_flags: frozenset[str]
    # Flags that make it compare symlinks as links instead of following them.
    no_follow_flags: frozenset[str]


@dataclass(frozen=True)
class ExecutableSpec:
    flags: frozenset[str] = frozenset()
    # Options whose value is required: attached, or else the next word.
    valued: Mapping[str, ValueKind] = field(default_factory=dict)
    # Options whose value is optional and only ever attached: -wVALUE, --name=VALUE.
    # Alone they take no value, so the next word is an operand.
    optional: Mapping[str, ValueKind] = field(default_factory=dict)
    operands: OperandRule = "paths"
    max_operands: int | None = None
    grammar: Grammar = "getopt"
    obsolete: ObsoleteCount | None = None
    # Flags that supply the pattern, so every operand is a path.
    pattern_flags: frozenset[str] = frozenset()
    # Short options that also take attached digits where the grammar reads values
    # from the next word (tree -L3).
    attached_digits: frozenset[str] = frozenset()
    # binutils: a word @FILE is replaced by the words written in FILE.
    response_files: bool = False
    folder_reads: FolderReads | None = None
    # Flags that make it follow every symlink it meets while it recurses (grep -R,
    # rg -L): the review then looks through the folders it searches.
    follows_links: frozenset[str] = frozenset()
    # Other programs it runs by their bare names through PATH (egrep runs grep).
    runs: tuple[str, ...] = ()


def _f(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _v(kind: ValueKind, names: str) -> dict[str, ValueKind]:
    return dict.fromkeys(names.split(), kind)


# head reads "-" and a digit in its first word as an obsolete count; its letters
# only choose units and headers.
_HEAD_OBSOLETE = ObsoleteCount(
    syntax=re.compile(r"-[0-9]"),
    allowed=re.compile(r"-[0-9]+[bcklmqvz]*\Z"),
    refused="is head's obsolete count with letters head does not have",
)
# tail's first word (with at most one file after it) is an obsolete option when
# it is +[N][bcl][f] or -N[bcl][f] (also -b, -l, -cf, -f): the f follows forever.
_TAIL_OBSOLETE = ObsoleteCount(
    syntax=re.compile(r"(?:\+[0-9]*[bcl]?f?|-(?:[0-9]+[bcl]?f?|[bl]f?|cf|f))\Z"),
    allowed=re.compile(r"(?:\+[0-9]*[bcl]?|-(?:[0-9]+[bcl]?|[bl]))\Z"),
    refused="is tail's obsolete form of -f: it follows the file and never ends",
)


_SUMS = ExecutableSpec(flags=_f("-b -t -z --binary --text --tag --zero"))

_GREP = ExecutableSpec(
    flags=_f(
        "-r -R -n -i -y -l -L -c -v -w -x -E -F -G -P -o -s -q -h -H -I -a -b -T -U -z -Z "
        "--recursive --dereference-recursive --line-number --ignore-case --no-ignore-case "
        "--files-with-matches --files-without-match --count --invert-match --word-regexp "
        "--line-regexp "
        "--extended-regexp --fixed-strings --basic-regexp --perl-regexp --only-matching "
        "--no-messages --quiet --silent --no-filename --with-filename --text --byte-offset "
        "--initial-tab --null --null-data --line-buffered"
    ),
    valued={
        **_v("count", "-A -B -C -m --after-context --before-context --context --max-count"),
        **_v("text", "-e --regexp --include --exclude --exclude-dir --label"),
        **_v("path", "-f --file"),
        "--binary-files": frozenset({"binary", "text", "without-match"}),
        "-d": frozenset({"read", "skip", "recurse"}),
        "--directories": frozenset({"read", "skip", "recurse"}),
        "-D": frozenset({"read", "skip"}),
        "--devices": frozenset({"read", "skip"}),
    },
    optional=_v("when", "--color --colour"),
    operands="pattern-paths",
    pattern_flags=_f("-e --regexp -f --file"),
    follows_links=_f("-R --dereference-recursive"),
)

_MATCHERS = _f("-E -F -G -P --extended-regexp --fixed-strings --basic-regexp --perl-regexp")
_GREP_SCRIPT = dataclasses.replace(_GREP, flags=_GREP.flags - _MATCHERS, runs=("grep",))

# Executables whose review is custom code (their grammar is not flags + operands).
CUSTOM = frozenset({"find", "sed"})

SPECS: Mapping[str, ExecutableSpec] = {
    "ls": ExecutableSpec(
        flags=_f(
            "-a -A -l -h -R -1 -d -F -t -S -r -i -n -s -p -g -o -x -C -m -c -u -U -X -v -G -N "
            "-Q -q -B -k --all --almost-all --human-readable --si --recursive --directory "
            "--inode --size --reverse --numeric-uid-gid --no-group "
            "--group-directories-first --full-time --literal --quote-name --escape "
            "--ignore-backups"
        ),
        valued={
            **_v("count", "-w --width -T --tabsize"),
            **_v("text", "-I --ignore --hide --time-style --block-size"),
            "--sort": frozenset({"none", "size", "time", "version", "extension", "width"}),
            "--format": frozenset(
                {"across", "commas", "horizontal", "long", "single-column", "verbose", "vertical"}
            ),
            "--indicator-style": frozenset({"none", "slash", "file-type", "classify"}),
            "--quoting-style": frozenset(
                {"literal", "locale", "shell", "shell-always", "shell-escape", "c", "escape"}
            ),
            "--time": frozenset({"atime", "access", "use", "ctime", "status", "birth", "mtime"}),
        },
        optional=_v("when", "--color --classify"),
    ),
    "cat": ExecutableSpec(
        flags=_f(
            "-n -b -s -A -E -T -v -e -t -u --number --number-nonblank --squeeze-blank "
            "--show-all --show-ends --show-tabs --show-nonprinting"
        )
    ),
    "head": ExecutableSpec(
        flags=_f("-q -v -z --quiet --silent --verbose --zero-terminated"),
        valued=_v("count", "-n -c --lines --bytes"),
        obsolete=_HEAD_OBSOLETE,
    ),
    # No -f/-F, nor the obsolete +1f: following a file never ends.
    "tail": ExecutableSpec(
        flags=_f("-q -v -z --quiet --silent --verbose --zero-terminated"),
        valued=_v("count", "-n -c --lines --bytes"),
        obsolete=_TAIL_OBSOLETE,
    ),
    # No --files0-from: it reads the list of files to open from a file.
    "wc": ExecutableSpec(
        flags=_f("-l -w -c -m -L --lines --words --bytes --chars --max-line-length")
    ),
    # -R follows every symlink it meets while recursing: the review walks the
    # folders it searches (FollowedLinks). No --exclude-from, -f outside the workspace.
    "grep": _GREP,
    # GNU grep's egrep and fgrep are scripts that run `grep -E` / `grep -F` through PATH.
    # The matcher is theirs: another one (-F, -E, -G, -P) makes grep refuse the command.
    "egrep": _GREP_SCRIPT,
    "fgrep": _GREP_SCRIPT,
    # No --pre/--pre-glob (run a program per file), -z/--search-zip (runs
    # decompressors). -L/--follow follows every symlink: the review walks the folders.
    "rg": ExecutableSpec(
        flags=_f(
            "-n -N -i -s -S -w -x -F -v -l -c -u -H -I -o -0 -q -P -U -a -b -p -. -L --follow "
            "--hidden --no-ignore --no-ignore-vcs --no-config --files --files-with-matches "
            "--files-without-match --count --count-matches --json --vimgrep --no-heading "
            "--heading --line-number --no-line-number --column --no-filename --with-filename "
            "--only-matching --ignore-case --case-sensitive --smart-case --word-regexp "
            "--line-regexp --fixed-strings --invert-match --trim --stats --null --no-messages "
            "--quiet --pcre2 --multiline --type-list --text --byte-offset --pretty"
        ),
        valued={
            **_v("text", "-t --type -T --type-not -g --glob --iglob -e --regexp -r --replace"),
            **_v("text", "--colors --context-separator --path-separator -E --encoding"),
            **_v("count", "-A -B -C -m -M -d -j --after-context --before-context --context"),
            **_v("count", "--max-count --max-columns --max-depth --max-filesize --threads"),
            **_v("path", "-f --file --ignore-file"),
            "--color": frozenset({"always", "never", "auto", "ansi"}),
            "--sort": frozenset({"none", "path", "modified", "accessed", "created"}),
            "--sortr": frozenset({"none", "path", "modified", "accessed", "created"}),
        },
        operands="pattern-paths",
        grammar="clap",
        pattern_flags=_f("-e --regexp -f --file --files --type-list"),
        follows_links=_f("-L --follow"),
    ),
    "stat": ExecutableSpec(
        flags=_f("-L -f -t --dereference --file-system --terse"),
        valued=_v("text", "-c --format --printf"),
    ),
    # No -z (looks inside compressed files) and no -m (a magic file from anywhere).
    "file": ExecutableSpec(
        flags=_f(
            "-b -i -L -h -N -s -k -r --brief --mime --mime-type --mime-encoding "
            "--dereference --no-dereference --no-pad --keep-going --raw --special-files"
        ),
        valued=_v("text", "-F --separator"),
    ),
    "du": ExecutableSpec(
        flags=_f(
            "-s -h -a -c -k -m -b -x -S --summarize --human-readable --all --total "
            "--apparent-size --bytes --one-file-system --si --separate-dirs --inodes"
        ),
        valued={
            **_v("count", "-d --max-depth"),
            **_v("text", "-t --threshold --exclude -B --block-size"),
        },
    ),
    "df": ExecutableSpec(
        flags=_f(
            "-h -H -i -T -a -l -k -P --human-readable --si --inodes --print-type --all "
            "--local --portability --total"
        ),
        valued=_v("text", "-t -x --type --exclude-type -B --block-size"),
    ),
    # No -o (writes a file), -l (follows links), -R/-H (write and make HTML),
    # --fromfile/--gitfile/--infofile/--hintro/--houtro (read a file named by a value).
    "tree": ExecutableSpec(
        flags=_f(
            "-a -d -f -i -s -h -p -u -g -D -F -C -n -Q -N -r -t -c -U -v -J -X "
            "--noreport --dirsfirst --du --prune"
        ),
        valued={**_v("count", "-L --filelimit"), **_v("text", "-I -P --charset")},
        grammar="tree",
        attached_digits=_f("-L"),
    ),
    "pwd": ExecutableSpec(flags=_f("-L -P"), operands="none"),
    "echo": ExecutableSpec(flags=_f("-n -e -E"), operands="text"),
    "basename": ExecutableSpec(
        flags=_f("-a -z --multiple --zero"), valued=_v("text", "-s --suffix"), operands="text"
    ),
    "dirname": ExecutableSpec(flags=_f("-z --zero"), operands="text"),
    "realpath": ExecutableSpec(
        flags=_f(
            "-e -m -s -q -z -P --no-symlinks --canonicalize-existing --canonicalize-missing "
            "--quiet --strip --physical --zero"
        ),
        valued=_v("path", "--relative-to --relative-base"),
    ),
    "readlink": ExecutableSpec(
        flags=_f(
            "-f -e -m -n -q -s -v -z --canonicalize --canonicalize-existing "
            "--canonicalize-missing --no-newline --quiet --silent --verbose --zero"
        )
    ),
    # No -o (writes), -T (temp dir), --compress-program (runs a program), --files0-from.
    "sort": ExecutableSpec(
        flags=_f(
            "-b -d -f -g -i -M -h -n -R -r -V -c -C -s -u -z --reverse --unique "
            "--numeric-sort --human-numeric-sort --version-sort --ignore-case --stable "
            "--ignore-leading-blanks --dictionary-order --general-numeric-sort "
            "--month-sort --random-sort --zero-terminated"
        ),
        valued=_v("text", "-k --key -t --field-separator"),
        optional={"--check": frozenset({"diagnose-first", "quiet", "silent"})},
    ),
    # uniq's second operand is an output file: one operand at most.
    "uniq": ExecutableSpec(
        flags=_f("-c -d -D -u -i -z --count --repeated --unique --ignore-case --zero-terminated"),
        valued=_v("count", "-f -s -w --skip-fields --skip-chars --check-chars"),
        max_operands=1,
    ),
    "cut": ExecutableSpec(
        flags=_f("-s -z -n --complement --only-delimited --zero-terminated"),
        valued=_v(
            "text", "-b -c -f -d --bytes --characters --fields --delimiter --output-delimiter"
        ),
    ),
    # diff opens the files inside folder operands and follows symlinks there, so
    # the review looks inside them (FolderReads). No -l (runs pr), -X/--from-file/
    # --to-file (name files the operands do not show).
    "diff": ExecutableSpec(
        flags=_f(
            "-u -q -r -N -y -w -b -B -i -a -t -T -s -c -p -d --brief --recursive --new-file "
            "--side-by-side --ignore-all-space --ignore-space-change --ignore-blank-lines "
            "--ignore-case --text --report-identical-files --minimal --suppress-common-lines "
            "--expand-tabs --initial-tab --show-c-function --no-dereference"
        ),
        valued={
            **_v("count", "-U -W --width"),
            **_v("text", "-x --exclude -I --ignore-matching-lines --label"),
        },
        optional=_v("when", "--color"),
        max_operands=2,
        folder_reads=FolderReads(
            recursive_flags=_f("-r --recursive"), no_follow_flags=_f("--no-dereference")
        ),
    ),
    "cmp": ExecutableSpec(
        flags=_f("-b -l -s --print-bytes --verbose --silent --quiet"),
        valued={**_v("text", "-i --ignore-initial"), **_v("count", "-n --bytes")},
        max_operands=2,
    ),
    # The checksum tools without -c/--check, which opens the files a list names.
    "md5sum": _SUMS,
    "sha1sum": _SUMS,
    "sha256sum": _SUMS,
    "sha512sum": _SUMS,
    "b2sum": _SUMS,
    "nl": ExecutableSpec(
        flags=_f("-p --no-renumber"),
        valued=_v("text", "-b -h -f -n -s -d -v -i -w -l"),
    ),
    # -w/--width take their value only attached: `od -w FILE` reads FILE.
    "od": ExecutableSpec(
        flags=_f("-b -c -d -o -x -v -i -l -s"),
        valued=_v("text", "-A -t -N -j --address-radix --format --read-bytes --skip-bytes"),
        optional=_v("count", "-w --width"),
    ),
    "hexdump": ExecutableSpec(
        flags=_f("-b -c -C -d -o -x -v"),
        valued={**_v("count", "-n -s"), **_v("text", "-e")},
    ),
    "tac": ExecutableSpec(flags=_f("-b -r --before --regex"), valued=_v("text", "-s --separator")),
    # binutils: `strings @FILE` reads more arguments (files to open) from FILE.
    "strings": ExecutableSpec(
        flags=_f("-a -d -f -w --all --data --print-file-name --include-all-whitespace"),
        valued={
            **_v("count", "-n --bytes"),
            **_v("text", "-e --encoding"),
            "-t": frozenset({"d", "o", "x"}),
            "--radix": frozenset({"d", "o", "x"}),
        },
        response_files=True,
    ),
    "comm": ExecutableSpec(
        flags=_f("-1 -2 -3 -z --check-order --nocheck-order --total --zero-terminated"),
        valued=_v("text", "--output-delimiter"),
        max_operands=2,
    ),
    "paste": ExecutableSpec(
        flags=_f("-s -z --serial --zero-terminated"), valued=_v("text", "-d --delimiters")
    ),
    # GNU base64 has no option that writes a file (BSD's -o is not GNU's).
    "base64": ExecutableSpec(
        flags=_f("-d -i --decode --ignore-garbage"),
        valued=_v("count", "-w --wrap"),
        max_operands=1,
    ),
    # Its operands are numbers, never files; it reads only standard input.
    "numfmt": ExecutableSpec(
        flags=_f("-z --zero-terminated --debug --grouping --header"),
        valued={
            **_v("text", "-d --delimiter --field --format --suffix"),
            **_v("count", "--from-unit --to-unit --padding"),
            "--from": frozenset({"none", "auto", "si", "iec", "iec-i"}),
            "--to": frozenset({"none", "si", "iec", "iec-i"}),
            "--round": frozenset({"up", "down", "from-zero", "towards-zero", "nearest"}),
            "--invalid": frozenset({"abort", "fail", "warn", "ignore"}),
        },
        optional=_v("count", "--header"),
        operands="text",
    ),
    # What `cmd || true` ends with; both ignore their operands, so none are allowed.
    "true": ExecutableSpec(operands="none"),
    "false": ExecutableSpec(operands="none"),
    # No --args/--jsonargs (operands stop being files), -L (module search
    # path), --rawfile/--slurpfile (read any file into a variable), -f (a filter
    # from a file, which this review cannot see). The filter itself is checked
    # by PATTERN_GUARDS.
    "jq": ExecutableSpec(
        flags=_f(
            "-r -j -c -S -e -s -n -a -C -M -R --raw-output --join-output --compact-output "
            "--sort-keys --exit-status --slurp --null-input --ascii-output --tab "
            "--color-output --monochrome-output --raw-input --seq"
        ),
        valued=_v("count", "--indent"),
        operands="pattern-paths",
        grammar="jq",
    ),
    "uname": ExecutableSpec(
        flags=_f(
            "-a -s -n -r -v -m -p -i -o --all --kernel-name --nodename --kernel-release "
            "--kernel-version --machine --processor --hardware-platform --operating-system"
        ),
        operands="none",
    ),
    "whoami": ExecutableSpec(operands="none"),
    "id": ExecutableSpec(
        flags=_f("-u -g -G -n -r -z --user --group --groups --name --real --zero"),
        operands="text",
        max_operands=1,
    ),
    "nproc": ExecutableSpec(flags=_f("--all"), operands="none"),
    # No -s/--set and no -f/--file; the one operand must be a +FORMAT.
    "date": ExecutableSpec(
        flags=_f("-u -R --utc --universal --rfc-email"),
        valued={**_v("text", "-d --date"), **_v("path", "-r --reference")},
        operands="date-format",
    ),
    "which": ExecutableSpec(flags=_f("-a"), operands="text"),
    # Only standard output: no options at all, so bash's `printf -v VAR` (which sets
    # a variable, PATH included, for the commands after it) asks.
    "printf": ExecutableSpec(operands="text"),
    # Reads only standard input; its operands are character sets.
    "tr": ExecutableSpec(
        flags=_f("-c -C -d -s -t --complement --delete --squeeze-repeats --truncate-set1"),
        operands="text",
        max_operands=2,
    ),
}

READ_ONLY_EXECUTABLES = frozenset(SPECS) | CUSTOM

# Words a pattern operand may not contain: jq's filter language can read the
# environment ($ENV, also written `$ ENV`, and env) and load modules from outside
# the workspace.
PATTERN_GUARDS: Mapping[str, re.Pattern[str]] = {
    "jq": re.compile(
        r"\$\s*ENV\b|\b(?:env|import|include|modulemeta|get_search_list|get_prog_origin"
        r"|get_jq_origin|input_filename|debug|stderr|halt_error)\b"
    ),
}

# find: the predicates allowed and whether each takes a value.
FIND_GLOBAL_FLAGS = frozenset({"-H", "-P"})
FIND_NO_VALUE = _f(
    "-print -print0 -ls -prune -empty -true -false -depth -xdev -mount -quit -readable "
    "-writable -executable -nouser -nogroup -daystart -ignore_readdir_race -noleaf "
    "-not -a -and -o -or ( ) ,"
)
FIND_VALUE: Mapping[str, ValueKind] = {
    **_v("text", "-name -iname -path -ipath -wholename -iwholename -regex -iregex -lname"),
    **_v("text", "-ilname -regextype -type -xtype -size -perm -user -group -printf"),
    **_v("count", "-maxdepth -mindepth -mtime -mmin -atime -amin -ctime -cmin -used"),
    **_v("count", "-uid -gid -links -inum"),
    **_v("path", "-newer -anewer -cnewer -samefile"),
}
