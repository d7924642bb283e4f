"""``egg report DIR``: (re)generate the self-contained HTML report of a run or a KernelBench suite."""

from __future__ import annotations

import argparse
import webbrowser
from pathlib import Path

from egg.errors import EggInputError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "report",
        help="write report.html for a run directory or a KernelBench suite directory",
        description="Regenerates DIR/report.html from DIR/report.json (a run) or DIR/suite.json (a "
                    "KernelBench suite, with each problem's run report) and prints its path.",
    )
    p.add_argument("run_dir", type=Path, metavar="DIR", help="run directory or KernelBench suite output directory")
    p.add_argument("--open", action="store_true", help="open the report in a web browser")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from egg.report.html import regenerate
    from egg.report.suite import is_suite_dir, write_suite_report

    folder: Path = args.run_dir
    if not folder.is_dir():
        raise EggInputError(f"{folder}: no such directory")
    try:
        if (folder / "report.json").is_file():
            path = regenerate(folder)
        elif is_suite_dir(folder):
            path = write_suite_report(folder)
        elif (folder / "config.json").is_file():
            raise EggInputError(f"{folder}: the run has no report.json yet (unfinished? resume it with "
                                f"'egg optimize --resume {folder}')")
        else:
            raise EggInputError(f"{folder}: not a run directory (no report.json) nor a suite directory (no suite.json)")
    except EggInputError:
        raise
    except (ValidationError, ValueError) as exc:  # malformed report.json / suite.json
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise EggInputError(f"{folder}: unreadable report data: {first}") from None
    print(path.resolve())
    if args.open:
        webbrowser.open(path.resolve().as_uri())
    return 0
