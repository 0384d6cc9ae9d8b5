"""``redactopt report`` and the figure and page options of ``design``, ``compare`` and ``apply`` (issue 27).

* ``redactopt report REPORT.json --html FILE``: the release report as one self-contained HTML
  page (:mod:`redactopt.interface.html`); the report's side file of sequences is read from beside
  it (or ``--sequences FILE``).
* ``design --plot FILE`` and ``compare --plot FILE`` draw the design or the comparison
  (:mod:`redactopt.interface.plots`) to a ``.png`` or ``.svg`` file; ``apply --html FILE`` writes
  the page of the release it just made.

The commands register the options with :func:`add_plot_option` / :func:`add_html_option`, check
them with :func:`check_plot` / :func:`check_html` before any work (bad input is one line and exit
2, and nothing is written), and write with :func:`maybe_plot_design`, :func:`maybe_plot_compare`
and :func:`maybe_write_html` once their result is there.  Every file is written through a
temporary file and a rename, and an existing file is refused unless ``--force``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from redactopt.errors import UsageError
from redactopt.interface.options import EXIT_OK, add_format, add_quiet
from redactopt.io import STDIO

__all__ = ["add_report_parser", "add_plot_option", "add_html_option", "check_plot", "check_html",
           "maybe_plot_design", "maybe_plot_compare", "maybe_write_html", "cmd_report"]


# ---------------------------------------------------------------------------
# options of the other commands
# ---------------------------------------------------------------------------
def add_plot_option(ap: argparse.ArgumentParser, *, what: str = "the design") -> None:
    """Register ``--plot FILE`` (``.png`` or ``.svg``) on a command's parser."""
    ap.add_argument("--plot", default=None, metavar="FILE",
                    help=f"also draw {what} to FILE (.png or .svg by its name; its directory must exist; an "
                         "existing file is refused unless --force); not with --format json to standard output")


def add_html_option(ap: argparse.ArgumentParser) -> None:
    """Register ``--html FILE`` (``apply``: the release report as one HTML page)."""
    ap.add_argument("--html", default=None, metavar="FILE",
                    help="also write the release report as one self-contained HTML page to FILE (.html or .htm; "
                         "its directory must exist; an existing file is refused unless --force): summary, chain "
                         "fit, designs, exact leakage of every private record, sequences worst first, columns "
                         "not covered; no script, nothing fetched")


def _same_file(a: str | None, b: str | None) -> bool:
    if a in (None, STDIO) or b in (None, STDIO):
        return False
    return Path(a).resolve() == Path(b).resolve()  # type: ignore[arg-type]


def check_plot(args: argparse.Namespace) -> None:
    """Refuse a bad ``--plot`` before any work (``UsageError``/``ValueError``/``FileExistsError``: exit 2).

    Refused: ``--format json`` going to standard output (that output is for a program to read),
    a file name other than ``.png``/``.svg`` or ``-``, a missing or unwritable directory, the same
    file as ``--out``, an existing file without ``--force``.
    """
    plot = getattr(args, "plot", None)
    if plot is None:
        return
    from redactopt.interface.plots import check_figure_path

    out = getattr(args, "out", None)
    if (getattr(args, "format", None) or "text") == "json" and out in (None, STDIO):
        raise UsageError("--plot cannot be combined with --format json to standard output (that output is read by "
                         "programs); give the JSON a file with --out FILE")
    if _same_file(out, plot):
        raise UsageError(f"--plot and --out name the same file {plot}")
    check_figure_path(plot, force=bool(getattr(args, "force", False)), option="--plot")


def check_html(args: argparse.Namespace) -> None:
    """Refuse a bad ``apply --html`` before any work: ``-`` (standard output carries the summary, and
    may carry the release or the report), a name not ending in ``.html``/``.htm``, a missing or
    unwritable directory, an existing file without ``--force``, or the input, ``--out`` or
    ``--report`` itself."""
    html = getattr(args, "html", None)
    if html is None:
        return
    from redactopt.interface.html import check_html_path

    out, report = getattr(args, "out", None), getattr(args, "report", None)
    if html == STDIO:
        raise UsageError("apply --html needs a file name ending in .html ('-' is not one: the summary, the release "
                         "or the report may be on standard output); redactopt report REPORT.json --html - prints it")
    for name, other in (("the input", getattr(args, "input", None)), ("--out", out), ("--report", report)):
        if _same_file(html, other):
            raise UsageError(f"--html {html} is {name}; give the page a file of its own")
    check_html_path(html, force=bool(getattr(args, "force", False)))


def _tell(args: argparse.Namespace, line: str, *, data_on_stdout: bool) -> None:
    """A line naming a file written: on standard output, or on standard error when the data go there."""
    if data_on_stdout:
        if not getattr(args, "quiet", False):
            print(line, file=sys.stderr)
    else:
        print(line)


def _data_on_stdout(args: argparse.Namespace) -> bool:
    return (getattr(args, "format", None) or "text") != "text" and getattr(args, "out", None) in (None, STDIO)


def maybe_plot_design(args: argparse.Namespace, result: Any) -> Path | None:
    """``--plot``: draw the design (:func:`~redactopt.interface.plots.design_figure`) and save it; the path written."""
    if getattr(args, "plot", None) is None:
        return None
    from redactopt.interface.plots import design_figure, save_figure

    path = save_figure(design_figure(result), args.plot, force=bool(getattr(args, "force", False)))
    _tell(args, f"wrote {path}", data_on_stdout=_data_on_stdout(args))
    return path


def maybe_plot_compare(args: argparse.Namespace, rows: list[dict[str, Any]]) -> Path | None:
    """``--plot``: draw the comparison (:func:`~redactopt.interface.plots.compare_figure`) and save it."""
    if getattr(args, "plot", None) is None:
        return None
    from redactopt.interface.plots import compare_figure, save_figure

    path = save_figure(compare_figure(rows), args.plot, force=bool(getattr(args, "force", False)))
    _tell(args, f"wrote {path}", data_on_stdout=_data_on_stdout(args))
    return path


def _side_file(report: dict[str, Any], report_path: str | None) -> Path | None:
    """The side file of sequences a report names, beside its report file (``None`` if it names none)."""
    name = report.get("sequences_file")
    if not name:
        return None
    base = Path(".") if report_path in (None, STDIO) else Path(report_path).parent  # type: ignore[arg-type]
    return base / str(name)


def maybe_write_html(args: argparse.Namespace, report: dict[str, Any]) -> Path | None:
    """``apply --html``: write the page of the release just made (its side file read from beside ``--report``)."""
    if getattr(args, "html", None) is None:
        return None
    from redactopt.interface.html import write_report_html

    path = write_report_html(report, args.html, sequences_path=_side_file(report, getattr(args, "report", None)),
                             force=bool(getattr(args, "force", False)))
    if path is not None:
        taken = STDIO in (getattr(args, "out", None), getattr(args, "report", None))
        _tell(args, f"html      : {path}", data_on_stdout=taken or (getattr(args, "format", None) or "text") == "json")
    return path


# ---------------------------------------------------------------------------
# redactopt report
# ---------------------------------------------------------------------------
def add_report_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``redactopt report REPORT.json --html FILE``."""
    from redactopt.interface.html import MAX_DESIGNS_PLOTTED, MAX_SEQUENCES_SHOWN

    ap = sub.add_parser(
        "report",
        help="turn a release report (apply --report) into one self-contained HTML page",
        description=(
            "Write the JSON report of 'redactopt apply' (binary or k-state) as one HTML page a reviewer can open "
            "in any browser, offline, and print: the plain-language summary, the chain fit (estimates, intervals, "
            "order test) and for robust releases the box of chains, every distinct design with its figure, blocks "
            "and certified bound, the exact leakage of every private record, for --by releases the sequences "
            "worst first (read from the report's side file REPORT.sequences.parquet or .jsonl beside it), and the "
            "columns written but not covered. No script, nothing fetched. Example: redactopt report report.json "
            "--html report.html"),
    )
    ap.add_argument("report", metavar="REPORT.json", help="the report of redactopt apply ('-': standard input)")
    ap.add_argument("--html", required=True, metavar="FILE",
                    help="the page to write (.html or .htm; '-': standard output); its directory must exist")
    ap.add_argument("--sequences", default=None, metavar="FILE",
                    help="the report's per-sequence rows (.parquet or .jsonl) when they are not beside the report")
    ap.add_argument("--max-sequences", type=int, default=MAX_SEQUENCES_SHOWN, metavar="N",
                    help=f"sequences listed one by one, worst first (default {MAX_SEQUENCES_SHOWN})")
    ap.add_argument("--max-designs", type=int, default=MAX_DESIGNS_PLOTTED, metavar="N",
                    help=f"distinct designs drawn, the most used first (default {MAX_DESIGNS_PLOTTED})")
    ap.add_argument("--force", action="store_true", help="overwrite --html if it exists")
    add_format(ap, ["text", "json"], help="text (default: one line naming the page) or json (the page's path, "
                                          "size and the side file read)")
    add_quiet(ap)
    ap.set_defaults(func=cmd_report)


def _read_report(path: str) -> tuple[dict[str, Any], Path | None]:
    from redactopt.interface.html import load_report, report_formats

    if path != STDIO:
        return load_report(path)
    try:
        report = json.loads(sys.stdin.read())
    except json.JSONDecodeError as exc:
        raise ValueError(f"<stdin>: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(report, dict) or report.get("format") not in report_formats():
        raise ValueError("<stdin>: not a release report; give the --report file of redactopt apply")
    return report, _side_file(report, None)


def cmd_report(args: argparse.Namespace) -> int:
    """``redactopt report REPORT.json --html FILE``: exit 0, or 2 with one line for bad input."""
    from redactopt.interface.html import write_report_html

    fmt = args.format or "text"
    if args.max_sequences < 1:
        raise UsageError(f"--max-sequences must be >= 1, got {args.max_sequences}")
    if args.max_designs < 0:
        raise UsageError(f"--max-designs must be >= 0, got {args.max_designs}")
    if args.html == STDIO and fmt == "json":
        raise UsageError("--html - and --format json both ask for standard output; give the page a file")
    if _same_file(args.html, args.report) or _same_file(args.html, args.sequences):
        raise UsageError(f"--html {args.html} would overwrite the report it reads")
    from redactopt.interface.outputs import Output, check_outputs

    check_outputs([Output("--html", args.html, "html")], force=args.force)  # before the report is read
    report, side = _read_report(args.report)
    if args.sequences is not None:
        side = Path(args.sequences)
    path = write_report_html(report, args.html, sequences_path=side, force=args.force,
                             max_sequences=args.max_sequences, max_designs=args.max_designs)
    if path is None:
        return EXIT_OK
    if fmt == "json":
        print(json.dumps({"html": str(path), "bytes": path.stat().st_size, "report": args.report,
                          "report_format": report.get("format"), "sequences_file": None if side is None else str(side)},
                         indent=2))
    elif not args.quiet:
        print(f"wrote {path}")
    return EXIT_OK
