"""``budget-report``: render saved JSON reports as HTML, compare runs, merge shards.

``python -m pytest_budget report ...`` is the same command.  Plain Python (no pytest).
Each subcommand lives in the module that does the work; this file only parses and
dispatches, and turns a one-line error into exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="budget-report",
        description="Render, compare and merge pytest-budget JSON reports.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    render = commands.add_parser(
        "render",
        help="write one self-contained HTML page from one or more JSON reports",
    )
    render.add_argument("reports", nargs="+", help="JSON reports (pytest --budget-report=PATH)")
    render.add_argument("-o", "--output", required=True, help="HTML file to write")
    render.add_argument(
        "--compare",
        action="store_true",
        help="with two reports: put them side by side (first = baseline) and mark the deltas",
    )
    render.add_argument(
        "--sample-cap",
        type=int,
        default=None,
        metavar="N",
        help="samples per cell drawn into the page (default 5000; the JSON report keeps all)",
    )

    merge = commands.add_parser(
        "merge",
        help="combine the JSON reports of shards (--budget-shard=i/N) into one report",
    )
    merge.add_argument("reports", nargs="+", help="the shards' JSON reports")
    merge.add_argument("-o", "--output", required=True, help="merged JSON report to write")
    merge.add_argument("--html", default=None, help="also render the merged report as HTML")
    merge.add_argument(
        "--allow-partial",
        action="store_true",
        help="merge even when some shards' reports are missing (default: refuse)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from pytest_budget.report._document import ReportFileError

    try:
        if args.command == "render":
            from pytest_budget.report._html import render_command

            return render_command(
                args.reports, args.output, compare=args.compare, sample_cap=args.sample_cap
            )
        from pytest_budget.report._merge import merge_command

        return merge_command(
            args.reports, args.output, html=args.html, allow_partial=args.allow_partial
        )
    except ReportFileError as exc:
        print(f"budget-report: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
