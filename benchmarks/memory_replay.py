"""What a memory file would make the expert designer propose first, problem by problem, without a GPU.

For each problem: the structures in the packs' order (the built-in packs' decisions for the problem's
analysis on the H200's documented facts), each one's memory score (``egg.memory`` retrieval, the
same call the designer's ``task.strategies`` come from), and the order the designer would take.
A replay, not a measurement: it says where a transfer benchmark can differ between ``--memory`` and
``--no-memory`` (issue 14), so device time goes to those problems.

    python benchmarks/memory_replay.py --memory benchmarks/results/h200-2026-12-04-second/memory_warm_2251b71.sqlite \\
        --kb-root .kb/KernelBench --kb-level 2 --ids 6,16,26,36,46,56,76,86,96
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents.expert.agents import choices_for, memory_order, program_for  # noqa: E402
from agents.expert.decline import ExpertDecline  # noqa: E402
from egg.analysis import analyze_problem  # noqa: E402
from egg.device import default_facts  # noqa: E402
from egg.logging import configure_logging  # noqa: E402
from egg.memory import Context, TransitionMemory, directions  # noqa: E402
from kernelbench_adapter.dataset import list_problems, select_problems  # noqa: E402
from principles import Facts, decide  # noqa: E402
from egg.vocabulary import Focus, Stage  # noqa: E402
from principles.discovery import load_packs  # noqa: E402


def replay(path: Path, memory: TransitionMemory, device: str) -> dict[str, object]:
    analysis = analyze_problem(path).model_dump(mode="json")
    facts = default_facts()
    context = Context.from_analysis(analysis, device)
    stage = Stage.ALGORITHM_DESIGN.value  # the designer's strategies: its stage and focus, as a run retrieves them
    scores = {s.strategy: s.stats.score for d in directions(memory.observations(stage), context, stage=stage,
                                                            focus=Focus.STRUCTURE.value) for s in d.strategies}
    row: dict[str, object] = {"problem": path.stem, "kinds": context.anchors}
    try:
        offers = choices_for("cuda", decide(load_packs(), Facts.from_analysis(analysis, facts))).offers(
            program_for(str(path), "default"))
    except ExpertDecline as exc:
        return {**row, "declined": str(exc)}
    packs = [o.variant.id for o in offers]
    memory_order(offers, scores)
    ordered = [o.variant.id for o in offers]
    return {**row, "packs": packs, "memory": ordered, "differs": ordered != packs,
            "scores": {v: round(scores.get(f"variant {v}", 0.0), 3) for v in packs}}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memory", type=Path, required=True)
    parser.add_argument("--device", default="NVIDIA H200", help="the device name the memory's observations carry")
    parser.add_argument("--kb-root", required=True)
    parser.add_argument("--kb-level", type=int, default=2)
    parser.add_argument("--ids", required=True)
    args = parser.parse_args()
    configure_logging(level="error")
    if not args.memory.is_file():
        parser.error(f"--memory {args.memory}: no such file")
    memory = TransitionMemory(args.memory)
    for problem in select_problems(list_problems(args.kb_root, args.kb_level), args.ids, None):
        sys.stdout.write(json.dumps(replay(Path(problem.path), memory, args.device)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
