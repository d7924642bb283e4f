"""``egg principles``: list, show, validate principle packs, and explain their decisions for a problem.

Also home of the ``--principles PATH`` option that every command running agents shares: use
:func:`add_principles_option` on the command's parser and :func:`packs_from_args` in its handler,
so discovery (built-ins, entry points, paths; later wins) is the same everywhere.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

from egg.device import DeviceFacts, device_facts, facts_from_spec, find_gpu
from egg.errors import EXIT_USAGE, EggInputError
from egg.vocabulary import STAGE_FOCUSES, Focus, OpClass, Stage
from principles import Decisions, Facts, LoadedPack, PackSet, decide, device_table, load_pack, load_packs, rank
from principles.discovery import builtin_pack_paths

# What `egg principles explain` says about who reads the decisions.
CONSUMERS = ("the expert agents apply these decisions (variants, tuning values, constants, user templates); "
             "the LLM agents read the principles' text")


def add_principles_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--principles", metavar="PATH", action="append", default=[],
        help="a principle pack (directory with pack.yaml, or a .yaml file); repeatable, later packs "
        "override earlier ones and the built-ins by principle id",
    )


def packs_from_args(args: argparse.Namespace) -> PackSet:
    """Built-ins + entry-point packs + ``--principles`` paths, in that order."""
    return load_packs(getattr(args, "principles", None) or [])


def _list(args: argparse.Namespace) -> int:
    packs = packs_from_args(args)
    if args.stage or args.focus or args.op_class:
        if args.stage:
            stages = [Stage(args.stage)]
        elif args.focus:  # the focus names its stage
            stages = [s for s, focuses in STAGE_FOCUSES.items() if Focus(args.focus) in focuses]
        else:
            stages = list(Stage)
        chosen = [r.principle for stage in stages
                  for r in rank(packs, stage=stage, focus=args.focus, op_classes=args.op_class or ())]
    else:
        chosen = packs.principles()
    if args.json:
        payload = {
            "packs": [v.model_dump() for v in packs.versions()],
            "principles": [
                {**p.model_dump(mode="json"), "pack": packs.owner(p.id).name} for p in chosen
            ],
        }
        print(json.dumps(payload, indent=2))
        return 0
    rows = [
        (p.id, f"{p.stage.value}/{p.focus.value}", ",".join(c.value for c in p.applies_to),
         p.bottleneck.value if p.bottleneck else "-", packs.owner(p.id).name)
        for p in chosen
    ]
    header = ("ID", "STAGE/FOCUS", "APPLIES_TO", "BOTTLENECK", "PACK")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    print()
    print(f"{len(rows)} principles from " + ", ".join(
        f"{v.name} {v.version} ({v.origin})" for v in packs.versions()))
    return 0


def _show_principle(packs: PackSet, principle_id: str) -> int:
    entry = packs.entry(principle_id)
    p, loaded = entry.principle, entry.pack
    print(f"id:         {p.id}")
    print(f"pack:       {loaded.name} {loaded.pack.version} ({loaded.origin}: {loaded.source})")
    replaced = packs.overrides().get(p.id)
    if replaced:
        print(f"overrides:  the principle of pack {replaced[0]!r}")
    print(f"stage:      {p.stage.value}")
    print(f"focus:      {p.focus.value}")
    print(f"applies_to: {', '.join(c.value for c in p.applies_to)}")
    print(f"bottleneck: {p.bottleneck.value if p.bottleneck else '-'}")
    if loaded.pack.targets:
        print(f"targets:    {', '.join(loaded.pack.targets)}")
    if p.template:
        template, path = packs.template(p.template)
        print(f"template:   {p.template} -> {path} ({template.entry}())")
    spaces = packs.tuning_spaces(p.id) + (packs.tuning_spaces(p.template) if p.template else [])
    for space in spaces:
        print(f"tuning:     {space.name}: {', '.join(space.parameters)} ({len(space.configs())} configs)")
    print()
    print(textwrap.fill(" ".join(p.text.split()), width=100))
    return 0


def _show_template(packs: PackSet, ref: str) -> int:
    template, path = packs.template(ref)
    print(f"template:   {ref} ({template.op_class.value})")
    print(f"file:       {path}")
    print(f"launcher:   {template.entry}()")
    print(f"about:      {template.description}")
    for param in template.parameters:
        default = "None" if param.default is None else repr(param.default)
        flag = ", constexpr" if param.constexpr else ""
        print(f"  {param.name} ({param.type}{flag}, default {default}): {param.description}")
    for space in packs.tuning_spaces(ref):
        print(f"tuning:     {space.name}: {', '.join(space.parameters)} ({len(space.configs())} configs)")
    print()
    print(path.read_text(encoding="utf-8").rstrip())  # the text a prompt's citation points to
    return 0


def _show(args: argparse.Namespace) -> int:
    packs = packs_from_args(args)
    if packs.get(args.id) is None and args.id in packs.templates():
        return _show_template(packs, args.id)
    if args.json:
        entry = packs.entry(args.id)
        print(json.dumps({**entry.principle.model_dump(mode="json"), "pack": entry.pack.name,
                          "pack_version": entry.pack.pack.version, "source": str(entry.pack.source)}, indent=2))
        return 0
    return _show_principle(packs, args.id)


def _validate(args: argparse.Namespace) -> int:
    builtins = [load_pack(p, origin="builtin") for p in builtin_pack_paths()]
    loaded: list[LoadedPack] = []
    for path in args.paths:
        loaded.append(load_pack(path))
        # Resolve cross-pack references against the built-ins and the packs validated so far; a
        # built-in being validated itself is not loaded twice.
        names = {pack.name for pack in loaded}
        packs = PackSet([*(b for b in builtins if b.name not in names), *loaded])
        pack = loaded[-1].pack
        overrides = sum(1 for _, new in packs.overrides().values() if new == pack.name)
        print(
            f"OK {loaded[-1].source}: {pack.name} {pack.version}: {len(pack.principles)} principles"
            f" ({overrides} overriding other packs), {len(pack.templates)} templates,"
            f" {len(pack.tuning_spaces)} tuning spaces"
        )
    return 0


def explain_facts(args: argparse.Namespace, packs: PackSet) -> tuple[Facts, DeviceFacts, str]:
    """The facts ``egg principles explain`` resolves decisions for: the problem's analysis and the
    device (this machine's GPU, the H200 defaults without one, or ``--gpu NAME`` from the table)."""
    from egg.analysis import analyze_problem
    from egg.problem import inspect_problem, select_shape_sets

    table = device_table(packs)
    if args.gpu:
        spec = find_gpu(args.gpu, table)
        if spec is None:
            known = ", ".join(row.match for row in table)
            raise EggInputError(f"--gpu {args.gpu}: not in the device table (known: {known}; a pack's 'devices:' adds one)")
        device = facts_from_spec(spec, notes=[f"--gpu {args.gpu}: the device table's {spec.match} row ({spec.source})"])
    else:
        device = device_facts(args.device, table)
    info = inspect_problem(args.problem)
    shape_set = select_shape_sets(info, args.shapes)[0]
    analysis = analyze_problem(args.problem, shape_set=shape_set)
    return Facts.from_analysis(analysis, device), device, shape_set


def _explain(args: argparse.Namespace) -> int:
    packs = packs_from_args(args)
    facts, device, shape_set = explain_facts(args, packs)
    decisions: Decisions = decide(packs, facts)
    plan, kind = _expert_plan(args.problem, shape_set, decisions)
    if args.json:
        print(json.dumps({"problem": str(args.problem), "shape_set": shape_set, "device": device.model_dump(mode="json"),
                          "decisions": decisions.model_dump(mode="json"), "expert": {"heuristics": kind, "plan": plan},
                          "note": CONSUMERS}, indent=2))
        return 0
    print(f"problem:  {args.problem} (shape set {shape_set})")
    print(f"facts:    {facts.line()}")
    print(f"device:   {device.line()}")
    for note in device.notes:
        print(f"          {note}")
    print()
    changed = decisions.explain()
    print("Decisions the packs change for this problem (decision  [principle]):" if changed else
          "No pack changes a tuning value, variant, constant or template for this problem.")
    for line in changed:
        print(f"  {line}")
    if decisions.constants:
        print()
        print("Constants in effect (value  [principle behind it]):")
        for name, c in sorted(decisions.constants.items()):
            origin = "default" if c.value == c.default and c.decided_by == c.default_by else f"default {c.default!r}"
            print(f"  {name} = {c.value!r} ({origin})  [{c.decided_by or 'pack ' + c.declared_by}]")
    if decisions.skipped:
        print()
        print("Decisions that do not apply here:")
        for skipped in decisions.skipped:
            print(f"  {skipped.principle} (block {skipped.block}): {skipped.reason}")
    print()
    print(f"What the expert agents do with them ({kind} heuristics):")
    for line in plan:
        print(f"  {line}")
    print()
    print(f"Note: {CONSUMERS}.")
    return 0


def _expert_plan(problem: str, shape_set: str, decisions: Decisions) -> tuple[list[str], str]:
    """The expert's plan under these decisions, on this machine's heuristics (cpu without a GPU)."""
    from agents.expert.agents import design_device
    from agents.expert.explain import expert_plan

    kind = design_device("auto")
    return expert_plan(problem, shape_set, decisions, kind), kind


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "principles", help="list, show and validate principle packs",
        description="Principle packs carry the expert knowledge the agents read (see principles/README.md).",
    )
    actions = parser.add_subparsers(dest="principles_action", metavar="ACTION", parser_class=type(parser))

    list_parser = actions.add_parser("list", help="list the principles in effect")
    add_principles_option(list_parser)
    list_parser.add_argument("--stage", choices=[s.value for s in Stage], help="only this stage")
    list_parser.add_argument("--focus", choices=[f.value for f in Focus], help="only this focus")
    list_parser.add_argument("--op-class", action="append", choices=[c.value for c in OpClass],
                             help="only principles about this operator class, most specific first (repeatable)")
    list_parser.add_argument("--json", action="store_true", help="print JSON (packs and principles)")
    list_parser.set_defaults(func=_list)

    show_parser = actions.add_parser("show", help="show one principle (or a template by '<pack>/<name>')")
    show_parser.add_argument("id", metavar="ID")
    add_principles_option(show_parser)
    show_parser.add_argument("--json", action="store_true", help="print JSON")
    show_parser.set_defaults(func=_show)

    validate_parser = actions.add_parser("validate", help="validate packs; print OK with counts or a one-line error")
    validate_parser.add_argument("paths", metavar="PATH", nargs="+", type=Path)
    validate_parser.set_defaults(func=_validate)

    explain_parser = actions.add_parser("explain", help="which principle changes which decision for a problem")
    explain_parser.add_argument("problem", metavar="PROBLEM", type=Path)
    add_principles_option(explain_parser)
    explain_parser.add_argument("--shapes", default=None, help="shape set to analyse (default: default)")
    explain_parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"],
                                help="the device whose facts decide (auto: this machine's GPU, else the H200 defaults)")
    explain_parser.add_argument("--gpu", metavar="NAME", default=None,
                                help="explain for a GPU of the device table instead (H200, H100, A100, ...)")
    explain_parser.add_argument("--json", action="store_true", help="print JSON")
    explain_parser.set_defaults(func=_explain)

    def _no_action(args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return EXIT_USAGE

    parser.set_defaults(func=_no_action)
