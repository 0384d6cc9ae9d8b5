"""The command line's shared conventions: one name per concept, old spellings as aliases.

Every command uses the same option names for the same things (``--private`` for private
positions, ``--split`` for 3R's budget split, ``--format text|json|...``, ``--out FILE``
with ``-`` for standard output, ``--force``, ``--quiet``).  Old spellings stay accepted
for one release: they are hidden aliases that store into the new option, are named in
the new option's help, and leave a one-line note on standard error when used.

Options default to ``None`` so that a command can tell "given" from "default": an option
a command cannot honour in the mode it runs in is an error naming the option
(:func:`refuse_given`), never silently ignored.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from redactopt.errors import UsageError


__all__ = [
    "read_transition",
    "EXIT_OK", "EXIT_FAIL", "EXIT_USAGE", "EXIT_INTERNAL",
    "Parser", "add_renamed", "merge_renamed", "rename_value", "refuse_given", "flag", "show_required",
    "parse_positions", "list_of", "add_quiet", "add_format", "keep_option", "DEFAULT_ALPHA", "DEFAULT_BETA",
]

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3

#: The chain of ``--alpha``/``--beta`` when none is given (the paper's Fig. 3).
DEFAULT_ALPHA = 0.01
DEFAULT_BETA = 0.8

#: Appended to the help of an option whose old spelling is still accepted.
_DEPRECATED = "; old spelling {old} accepted until the next release (deprecated)"


#: A token that is a negative number (a value, not an option), as argparse reads one.
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+(e[-+]?\d+)?$", re.IGNORECASE)


class Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line on stderr, naming the command, exit status 2.

    Every parser of the command line is one (the sub-commands too: ``add_subparsers`` is given
    ``parser_class=Parser``), so the rules below hold for every command:

    * abbreviations are refused (``allow_abbrev=False``): ``--ep 1`` is not ``--eps 1``;
    * an unknown option is named first, with the nearest known one
      (``unknown option --esp; did you mean --eps?``), before any complaint about missing ones;
    * options marked with :func:`show_required` appear as required in ``--help``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message.splitlines()[0] if message else 'bad usage'}\n")
        raise SystemExit(EXIT_USAGE)

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        argv = sys.argv[1:] if args is None else list(args)
        self._refuse_unknown_options(argv)
        return super().parse_known_args(argv, namespace)

    def _refuse_unknown_options(self, argv: list[str]) -> None:
        """Name the first option this parser does not know (its sub-command's tokens are the sub-parser's)."""
        commands = set()
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                commands |= set(action.choices)
        for token in argv:
            if token == "--" or token in commands:
                return
            if not token.startswith("-") or token == "-" or _NEGATIVE_NUMBER.match(token):
                continue
            name = token.split("=", 1)[0]
            if name in self._option_string_actions:
                continue
            known = [o for a in self._actions if a.help != argparse.SUPPRESS for o in a.option_strings
                     if o.startswith("--")]
            close = difflib.get_close_matches(name if name.startswith("--") else "-" + name, known, n=1, cutoff=0.7)
            self.error(f"unknown option {name}; did you mean {close[0]}?" if close
                       else f"unknown option {name} (see {self.prog} --help)")

    def format_usage(self) -> str:
        with _shown_required(self):
            return super().format_usage()

    def format_help(self) -> str:
        with _shown_required(self):
            return super().format_help()


class _shown_required:
    """While formatting help, mark the actions of :func:`show_required` as required."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.actions = [a for a in parser._actions if getattr(a, "shown_required", False)]

    def __enter__(self) -> None:
        for a in self.actions:
            a.required = True

    def __exit__(self, *exc: object) -> None:
        for a in self.actions:
            a.required = False


def show_required(action: argparse.Action) -> argparse.Action:
    """Show an option as required in ``--help`` while parsing leaves it optional.

    For an option whose old spelling (:func:`add_renamed`) may stand in for it: argparse would
    refuse the old spelling of a required option, so the command checks it itself.
    """
    action.shown_required = True  # type: ignore[attr-defined]
    return action


def flag(dest: str) -> str:
    """The option spelling of a destination (``eps_left`` -> ``--eps-left``)."""
    return "--" + dest.replace("_", "-")


def add_renamed(ap: argparse.ArgumentParser, new: str, old: str, **kwargs: Any) -> argparse.Action:
    """Add option ``new`` and its hidden old spelling ``old`` (same type and action); returns ``new``'s action.

    The old spelling stores into ``old__<dest>``; :func:`merge_renamed` moves it over.
    """
    help_text = kwargs.pop("help", "")
    action = ap.add_argument(new, help=help_text + _DEPRECATED.format(old=old), **kwargs)
    renamed = ap.get_default("_renamed") or []
    old_kwargs = {k: v for k, v in kwargs.items() if k not in ("required", "default", "metavar")}
    ap.add_argument(old, dest=f"old__{action.dest}", help=argparse.SUPPRESS,
                    default=False if kwargs.get("action") == "store_true" else None, **old_kwargs)
    ap.set_defaults(_renamed=renamed + [(action.dest, old, new)])
    return action


def merge_renamed(args: argparse.Namespace) -> None:
    """Move old spellings into their new options; both at once is an error."""
    for dest, old, new in getattr(args, "_renamed", None) or []:
        value = getattr(args, f"old__{dest}")
        if value is None or value is False:
            continue
        if getattr(args, dest) not in (None, False):
            raise UsageError(f"give {new} or its old spelling {old}, not both")
        setattr(args, dest, value)
        args._notes.append(f"{old} is deprecated; use {new} (the old spelling goes in the next release)")


def rename_value(args: argparse.Namespace, dest: str, renames: dict[str, str]) -> None:
    """Map an old value of an option (``--format table``) to its new name, with a note."""
    value = getattr(args, dest)
    if value in renames:
        setattr(args, dest, renames[value])
        args._notes.append(f"{flag(dest)} {value} is deprecated; use {flag(dest)} {renames[value]}")


def refuse_given(args: argparse.Namespace, dests: list[str], why: str) -> None:
    """Raise naming the first option in ``dests`` that was given (not ``None``/``False``)."""
    for dest in dests:
        if getattr(args, dest, None) not in (None, False):
            raise UsageError(f"{flag(dest)} {why}")


def add_quiet(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--quiet", action="store_true",
                    help="no progress bars or notes on standard error (bars appear only on a terminal anyway)")


def add_format(ap: argparse.ArgumentParser, choices: list[str], *, old: dict[str, str] | None = None,
               help: str = "") -> None:
    """``--format`` with ``text`` first; ``old`` maps deprecated value names to new ones."""
    note = ""
    if old:
        note = "; " + ", ".join(f"'{o}' is the old name of '{n}'" for o, n in old.items()) + \
               " (accepted until the next release)"
    ap.add_argument("--format", choices=choices + list(old or {}), default=None, metavar="{" + ",".join(choices) + "}",
                    help=(help or f"output format (default {choices[0]})") + note)


def parse_positions(text: str, n: int | None = None, name: str = "--private") -> list[int]:
    """1-based positions and ranges (``"5000,5010-5020"``) -> sorted 0-based indices.

    With ``n``, every position must lie in ``1..n``; the message names the item.  An
    empty item (``"1,,2"``) is an error, not skipped.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{name} needs positions such as 5000,5010-5020, got {text!r}")
    out: set[int] = set()
    for item in text.split(","):
        item = item.strip()
        if not item:
            raise ValueError(f"{name}: empty item in {text!r}")
        try:
            if "-" in item:
                a_s, b_s = item.split("-", 1)
                a, b = int(a_s), int(b_s)
                if b < a:
                    raise ValueError
                rng = range(a, b + 1)
            else:
                a = b = int(item)
                rng = range(a, a + 1)
        except ValueError:
            raise ValueError(f"{name}: {item!r} is not a position or a range a-b (1-based)") from None
        if a < 1 or (n is not None and b > n):
            limit = f"1..{n}" if n is not None else ">= 1"
            raise ValueError(f"{name}: {item!r} is outside the sequence (positions {limit})")
        out.update(p - 1 for p in rng)
    return sorted(out)


def list_of(kind: Callable[[str], Any], name: str) -> Callable[[str], list[Any]]:
    """An argparse type for comma-separated values; an empty item is an error."""
    def parse(text: str) -> list[Any]:
        items = [t.strip() for t in text.split(",")]
        if any(not t for t in items):
            raise argparse.ArgumentTypeError(f"{name}: empty item in {text!r}")
        try:
            return [kind(t) for t in items]
        except ValueError as exc:
            # a parser of our own says what is wrong with the item; int() and float() do not
            why = str(exc) if kind not in (int, float) and str(exc) else f"{name} must be a comma-separated list, got {text!r}"
            raise argparse.ArgumentTypeError(why) from None
    return parse


# ---------------------------------------------------------------------------
# --transition: a chain given as a matrix
# ---------------------------------------------------------------------------
def _labels(text: str | None, k: int | None = None) -> tuple[str, ...] | None:
    if text is None:
        return None
    items = [s.strip() for s in text.split(",")]
    if any(not s for s in items):
        raise UsageError(f"--labels: empty label in {text!r}")
    if k is not None and len(items) != k:
        raise UsageError(f"--labels names {len(items)} states, the matrix has {k}")
    return tuple(items)


def read_transition(value: str, labels: str | None = None) -> Any:
    """The chain of ``--transition FILE|"p11,p12,...;p21,..."`` (and ``--labels a,b,...``).

    A file is JSON with ``transition`` (rows) and optionally ``labels`` — the output of
    ``redactopt fit --categorical --format json`` and the ``chain`` of a k-state mechanism file
    both work; an inline matrix has rows separated by ``;``.
    """
    import json
    import os

    from redactopt.io import check_input_path
    from redactopt.model.chain import Chain as KChain, parse_transition

    if os.path.exists(value) or value.endswith(".json"):
        path = check_input_path(value)
        try:
            d = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise UsageError(f"--transition {value}: cannot read a JSON matrix: {str(exc).splitlines()[0]}") from None
        if isinstance(d, dict) and "transition" not in d and isinstance(d.get("chain"), dict):
            d = d["chain"]
        if not isinstance(d, dict) or "transition" not in d:
            raise UsageError(f"--transition {value}: expected a JSON object with 'transition' (rows) and 'labels'")
        rows, file_labels = d["transition"], d.get("labels")
        labs = _labels(labels, len(rows) if isinstance(rows, list) else None) or (
            tuple(str(s) for s in file_labels) if file_labels is not None else None)
    else:
        rows = parse_transition(value, "--transition")
        labs = _labels(labels, len(rows))
    try:
        return KChain(rows, labels=labs or ())
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--transition: {exc}") from None


def keep_option(args: argparse.Namespace) -> list[str] | None:
    """``--keep`` and ``--keep-all`` as the library's ``keep`` (``"all"`` among the names: every column)."""
    names = [] if args.keep is None else [c.strip() for c in args.keep.split(",")]
    return (["all"] + names) if args.keep_all else (names or None)
