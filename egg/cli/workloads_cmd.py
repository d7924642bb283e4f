"""``egg workloads``: the shipped real-world workloads (``list``, ``show NAME``).

``egg workloads list`` prints one row per workload (name, dtype, shape sets, summary); ``--json``
prints the same as a JSON list; ``--bytes`` adds the compulsory traffic of the production shape
(imports torch and each workload on the meta device). ``egg workloads show NAME`` prints a
workload's path, docstring, production constants and shape sets. Optimise one with
``egg optimize workloads/NAME.py``.
"""

from __future__ import annotations

import argparse
import json
import sys

from egg.errors import EggInputError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "workloads",
        help="list the shipped LLM training/inference workloads",
        description="Real-world workloads from LLM training and inference, in the KernelBench problem format.",
    )
    actions = parser.add_subparsers(dest="workloads_action", metavar="ACTION", parser_class=type(parser))
    list_parser = actions.add_parser("list", help="one line per workload")
    list_parser.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    list_parser.add_argument(
        "--bytes", action="store_true", help="add the bytes moved at the production shape (imports torch)"
    )
    list_parser.set_defaults(func=_list)
    show_parser = actions.add_parser("show", help="path, docstring, constants and shape sets of one workload")
    show_parser.add_argument("name", help="workload name, e.g. rms_norm")
    show_parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    show_parser.set_defaults(func=_show)
    parser.set_defaults(func=_missing_action)


def _missing_action(args: argparse.Namespace) -> int:
    raise EggInputError("workloads: choose an action: list, show NAME (see 'egg workloads --help')")


def _format_bytes(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def _list(args: argparse.Namespace) -> int:
    from workloads import compulsory_bytes, list_workloads

    infos = list_workloads()
    sizes = {w.name: compulsory_bytes(w.path) for w in infos} if args.bytes else {}
    if args.json:
        rows = []
        for w in infos:
            row = w.model_dump(mode="json")
            if args.bytes:
                row["production_bytes"] = sizes[w.name]
            rows.append(row)
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return 0
    header = ["NAME", "DTYPE", "SHAPE SETS"] + (["BYTES"] if args.bytes else []) + ["SUMMARY"]
    table = [
        [w.name, w.dtype or "-", ",".join(w.shape_sets)]
        + ([_format_bytes(sizes[w.name])] if args.bytes else [])
        + [w.summary]
        for w in infos
    ]
    widths = [max(len(r[i]) for r in [header] + table) for i in range(len(header) - 1)]
    for row in [header] + table:
        cells = [c.ljust(widths[i]) for i, c in enumerate(row[:-1])] + [row[-1]]
        sys.stdout.write("  ".join(cells).rstrip() + "\n")
    return 0


def _show(args: argparse.Namespace) -> int:
    from egg.problem import inspect_problem
    from workloads import workload_path

    info = inspect_problem(workload_path(args.name))
    if args.json:
        sys.stdout.write(info.model_dump_json(indent=2) + "\n")
        return 0
    out = [f"{info.name}  ({info.path})", "", (info.docstring or "").strip(), "", "Production constants:"]
    out += [f"  {k} = {v!r}" for k, v in info.constants.items()]
    out.append("Shape sets:")
    out += [f"  {name}: {overrides or '(production)'}" for name, overrides in info.shape_sets.items()]
    if info.tolerance is not None:
        out.append(f"Tolerance: {info.tolerance!r}")
    sys.stdout.write("\n".join(out) + "\n")
    return 0
