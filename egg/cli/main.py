"""Entry point of the ``egg`` command.

Each subcommand lives in its own module under :mod:`egg.cli` and exposes
``add_parser(subparsers)``, which registers the parser and sets ``func`` to a function
``(args) -> int``. Bad input anywhere surfaces as :class:`egg.errors.EggInputError` and is printed
here as one line, exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from egg import __version__
from egg.errors import EXIT_USAGE, EggInputError
from egg.logging import configure_logging

# Subcommand modules, in the order `egg --help` lists them.
COMMANDS: tuple[str, ...] = ("optimize", "eval", "report", "kernelbench", "prompt", "principles", "memory",
                             "workloads")


class _OneLineParser(argparse.ArgumentParser):
    """argparse prints usage plus an error; we print the error alone, on one line, and exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message} (see '{self.prog} --help')\n")
        raise SystemExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog="egg",
        description="EGG: expert-guided agents that turn PyTorch modules into faster, verified GPU kernels.",
    )
    parser.add_argument("--version", action="version", version=f"egg {__version__}")
    parser.add_argument("--json-logs", action="store_true", help="log one JSON object per line (stderr)")
    parser.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_OneLineParser)
    for name in COMMANDS:
        importlib.import_module(f"egg.cli.{name}_cmd").add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(json_logs=args.json_logs, level=args.log_level)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except EggInputError as exc:
        sys.stderr.write(f"egg: error: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("egg: interrupted; completed work is saved in the run directory\n")
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
