"""``egg memory show|export|import|clear``: the transition memory that carries experience across runs.

Also home of the ``--memory PATH`` / ``--no-memory`` options that every command running or
prompting agents shares (:func:`add_memory_options`), so the default location (the cache
directory's ``memory.sqlite``, under ``EGG_CACHE_DIR``) is the same everywhere.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from egg.errors import EXIT_USAGE, EggInputError
from egg.memory import Context, TransitionMemory, default_memory_path, directions, transitions


def add_memory_options(parser: argparse.ArgumentParser, record_only: bool = False) -> None:
    """``--memory``, ``--no-memory`` and, for commands that run agents (``record_only``),
    ``--memory-record-only``."""
    parser.add_argument("--memory", metavar="PATH", type=Path, default=None,
                        help=f"transition memory file (default: {default_memory_path()})")
    parser.add_argument("--no-memory", action="store_true",
                        help="run without the transition memory: read nothing from it, record nothing in it")
    if record_only:
        parser.add_argument("--memory-record-only", action="store_true",
                            help="record every evaluated candidate in the memory but read nothing from it: the "
                                 "agents decide as with --no-memory (a benchmark that builds experience while it "
                                 "measures the packs alone)")


def read_memory(args: argparse.Namespace) -> bool:
    """Whether the run reads the memory; ``--memory-record-only`` with ``--no-memory`` is a usage error."""
    record_only = bool(getattr(args, "memory_record_only", False))
    if record_only and args.no_memory:
        raise EggInputError("--memory-record-only records in the memory and --no-memory records nothing: give one")
    return not record_only


def memory_path(args: argparse.Namespace) -> Path:
    return Path(args.memory) if getattr(args, "memory", None) else default_memory_path()


def _open(args: argparse.Namespace) -> TransitionMemory:
    return TransitionMemory(memory_path(args))


def _context(args: argparse.Namespace) -> Context | None:
    if not args.problem:
        return None
    from egg.analysis import analyze_problem
    from egg.device import device_facts
    from egg.problem import inspect_problem, select_shape_sets
    from principles import device_table, load_packs

    shape_set = select_shape_sets(inspect_problem(args.problem), args.shapes)[0]
    analysis = analyze_problem(args.problem, shape_set=shape_set).model_dump(mode="json")
    device = device_facts(args.device, device_table(load_packs()))
    return Context.from_analysis(analysis, device)


def _show(args: argparse.Namespace) -> int:
    memory = _open(args)
    context = _context(args)
    observations = memory.observations()
    found = directions(observations, context, stage=args.stage)
    moves = transitions(observations, context)
    if args.json:
        print(json.dumps({"memory": str(memory.path), "observations": len(observations),
                          "context": context.model_dump() if context else None,
                          "directions": [d.model_dump() for d in found],
                          "transitions": [t.model_dump() for t in moves]}, indent=2))
        return 0
    print(f"memory:   {memory.path} ({len(observations)} evaluated candidates)")
    if context is not None:
        print(f"problem:  {args.problem}: {context.line()} (same kind counts fully, similar ones half)")
    if not found:
        print("Nothing recorded" + (" for problems like this one." if context else " yet."))
        return 0
    print()
    for d in found:
        print(f"{d.stage}/{d.focus}: {d.direction}: {d.stats.text()}")
        for s in d.strategies[: args.strategies]:
            cites = f"  [{', '.join(s.principle_ids)}]" if s.principle_ids else ""
            print(f"    {s.strategy}: {s.stats.text()}{cites}")
    if moves:
        print()
        print("Transitions (from -> to):")
        for t in moves[: args.strategies * 3]:
            print(f"  {t.from_direction} -> {t.to_direction}: {t.stats.text()}")
    return 0


def _export(args: argparse.Namespace) -> int:
    data = _open(args).export()
    text = json.dumps(data, indent=2)
    if str(args.path) == "-":
        sys.stdout.write(text + "\n")
    else:
        try:
            args.path.write_text(text + "\n", encoding="utf-8")
        except OSError as exc:
            raise EggInputError(f"{args.path}: cannot write the export: {exc}") from None
        print(f"exported {len(data['observations'])} evaluated candidates to {args.path}")
    return 0


def _import(args: argparse.Namespace) -> int:
    memory = _open(args)
    added, known = memory.import_file(args.path)
    print(f"imported {added} evaluated candidates into {memory.path} ({known} were already there)")
    return 0


def _clear(args: argparse.Namespace) -> int:
    if not args.yes:
        raise EggInputError(f"egg memory clear deletes everything in {memory_path(args)}: add --yes to do it "
                            "(egg memory export PATH keeps a copy)")
    removed = _open(args).clear()
    print(f"removed {removed} evaluated candidates from {memory_path(args)}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "memory", help="show, export, import or clear the transition memory",
        description="What earlier runs learnt: directions and strategies with their gains, failure rates and costs.",
    )
    actions = parser.add_subparsers(dest="memory_action", metavar="ACTION", parser_class=type(parser))

    show = actions.add_parser("show", help="directions and strategies, best expected gain first")
    show.add_argument("problem", nargs="?", type=Path, help="only what applies to problems like this one")
    show.add_argument("--shapes", default=None, help="shape set of PROBLEM to analyse")
    show.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    show.add_argument("--stage", default=None, choices=["algorithm_design", "hardware_tuning"])
    show.add_argument("--strategies", type=int, default=5, help="strategies shown per direction")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=_show)

    export = actions.add_parser("export", help="write every observation as JSON (to share with a team)")
    export.add_argument("path", type=Path, metavar="PATH", help="output file, or - for stdout")
    export.set_defaults(func=_export)

    imp = actions.add_parser("import", help="add the observations of an exported JSON file")
    imp.add_argument("path", type=Path, metavar="PATH")
    imp.set_defaults(func=_import)

    clear = actions.add_parser("clear", help="delete every observation")
    clear.add_argument("--yes", action="store_true", help="really delete")
    clear.set_defaults(func=_clear)

    for sub in (show, export, imp, clear):
        sub.add_argument("--memory", metavar="PATH", type=Path, default=None,
                         help=f"memory file (default: {default_memory_path()})")

    def _no_action(args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return EXIT_USAGE

    parser.set_defaults(func=_no_action)
