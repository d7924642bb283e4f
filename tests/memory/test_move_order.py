"""The transition memory in a real run: a memory seeded with recorded gains of a tiling move
starts stage 1's structures from that move (remembered configs); with that switched off by a
user pack, it makes the tiling tuner's first evaluated candidate the move that paid off;
``--no-memory`` restores the packs' configs and order."""

from __future__ import annotations

import json
from pathlib import Path

from pack_helpers import one_rule_pack

from agents.expert.choices import choices_for
from agents.expert.design import analyse, design_candidates, read_config
from agents.expert.tuning import moves
from egg.analysis import analyze_problem
from egg.device import default_facts
from egg.memory import Context, Observation, TransitionMemory
from egg.vocabulary import Focus

RMS_NORM = Path(__file__).parents[2] / "workloads" / "rms_norm.py"


def _pack_order() -> list[str]:
    config = read_config(design_candidates(RMS_NORM, "small")[0].source)
    assert config is not None
    variant = analyse(RMS_NORM, "small").variant(config.variant)
    return [m.strategy() for m in moves(variant, config.by_kernel(), Focus.TILING, choices_for("cpu"))]


def _tiling_move(out: Path) -> str:
    report = json.loads((out / "report.json").read_text())
    tiled = [c for c in report["candidates"] if c["agent"] == "expert-tiling"]
    assert tiled, report["rejected"]
    return tiled[0]["structure"].rsplit("[", 1)[1].rstrip("]")


def _stage1_xblock(out: Path) -> tuple[int, list[str]]:
    """The first stage-1 candidate's rendered XBLOCK and its draft's notes."""
    folder = sorted(out.glob("candidates/s1r1-*"))[0]
    header = next(line for line in (folder / "candidate.py").read_text().splitlines()
                  if line.startswith("# EGG-EXPERT-CONFIG: "))
    config = json.loads(header.split(": ", 1)[1])
    return config["kernels"][0]["config"]["XBLOCK"], json.loads((folder / "draft.json").read_text())["notes"]


def _run(out: Path, *memory: str) -> Path:
    # `egg optimize` through the CLI's entry point in this process: the run is the same (its
    # candidates are judged in the judge's own processes); a subprocess per run cost ~8 s of imports
    from egg.cli.main import main

    code = main(["optimize", str(RMS_NORM), "--shapes", "small", "--llm", "none", "--device", "cpu", *memory,
                 "--budget", "candidates=4,stage2_rounds=1", "--out", str(out)])
    assert code == 0
    return out


def _seed(path: Path) -> str:
    """A memory at ``path`` holding three recorded gains of the tiling move the packs try last."""
    order = _pack_order()
    xblock = [m for m in order if ".XBLOCK=" in m]
    assert len(xblock) >= 2
    seeded = xblock[-1]  # last in the packs' order: only the memory can bring it first
    context = Context.from_analysis(analyze_problem(RMS_NORM, shape_set="small").model_dump(mode="json"),
                                    default_facts())
    TransitionMemory(path).record([
        Observation(run_id=f"earlier-{i}", candidate_id=f"s2r1-expert-tiling-{i}", problem="rms_norm.py",
                    context=context, stage="hardware_tuning", focus="tiling", direction="retile", strategy=seeded,
                    from_direction="fuse around library calls", accepted=True, gain=1.6, seconds=3.0)
        for i in range(3)])
    return seeded


def test_seeded_gains_start_stage_one_or_order_the_tuner_and_no_memory_keeps_the_packs(tmp_path: Path) -> None:
    seeded = _seed(tmp_path / "memory.sqlite")
    value = seeded.split("=")[1]
    without = _run(tmp_path / "nomem", "--no-memory")
    plain_xblock, plain_notes = _stage1_xblock(without)
    assert not any(n.startswith("transition memory") for n in plain_notes)
    assert not _tiling_move(without).endswith(f"-> {value}")
    # the memory's lesson starts stage 1 (the template may bound the value: the note says so)
    warm = _run(tmp_path / "mem", "--memory", str(tmp_path / "memory.sqlite"))
    warm_xblock, warm_notes = _stage1_xblock(warm)
    assert warm_xblock != plain_xblock
    assert any(n.startswith(f"transition memory: ") and f"XBLOCK {plain_xblock} -> {warm_xblock}" in n
               and seeded in n for n in warm_notes), warm_notes
    # a user pack switches that off: the memory then orders the tiling tuner's moves instead
    ordered = _run(tmp_path / "ordered", "--memory", str(tmp_path / "memory.sqlite"),
                   "--principles", str(one_rule_pack(tmp_path, "no-remembered/off", ["normalization", "reduction", "elementwise"],
                                                     {"constants": {"algorithm-structure/remembered-configs": 0}})))
    assert _stage1_xblock(ordered)[0] == plain_xblock
    first = _tiling_move(ordered)
    assert " XBLOCK " in first and first.endswith(f"-> {value}")


def test_a_record_only_run_decides_as_without_memory_and_records(tmp_path: Path) -> None:
    # the sweep's lanes (benchmarks/h200_sweep.sh): measure the packs alone, warm a memory meanwhile
    seeded = _seed(tmp_path / "memory.sqlite")
    value = seeded.split("=")[1]
    before = TransitionMemory(tmp_path / "memory.sqlite").count()
    plain_xblock, _ = _stage1_xblock(_run(tmp_path / "nomem", "--no-memory"))
    recorded = _run(tmp_path / "record", "--memory", str(tmp_path / "memory.sqlite"), "--memory-record-only")
    xblock, notes = _stage1_xblock(recorded)
    assert xblock == plain_xblock and not any(n.startswith("transition memory") for n in notes)
    assert not _tiling_move(recorded).endswith(f"-> {value}")
    report = json.loads((recorded / "report.json").read_text())
    assert TransitionMemory(tmp_path / "memory.sqlite").count() == before + len(report["candidates"])
    assert any("--memory-record-only: recorded, never read" in n for n in report["notes"]), report["notes"]


def test_record_only_and_no_memory_together_are_a_usage_error(tmp_path: Path, capsys) -> None:
    from egg.cli.main import main

    code = main(["optimize", str(RMS_NORM), "--llm", "none", "--device", "cpu", "--no-memory",
                 "--memory-record-only", "--out", str(tmp_path / "run")])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--memory-record-only" in err[0] and "--no-memory" in err[0]
    assert not (tmp_path / "run").exists()
