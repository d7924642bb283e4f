"""The graph and the transition memory: every evaluated candidate is recorded, later runs' LLM
prompts carry what earlier runs found, a run's own observations never change its prompts, and
--no-memory leaves the memory alone."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from egg.config import Budget, RunConfig
from egg.memory import START, TransitionMemory
from egg.run import run_optimization

FIXTURES = Path(__file__).parents[1] / "fixtures"
PROBLEM = FIXTURES / "problems" / "add_relu.py"
GOOD = (FIXTURES / "candidates" / "add_relu_triton.py").read_text()
WRONG = (FIXTURES / "candidates" / "harness" / "wrong_values.py").read_text()


def answer(code: str, principles: str) -> AIMessage:
    return AIMessage(content=f"STRUCTURE: fused add+relu\n```python\n{code}\n```\nPRINCIPLES: {principles}\n")


def prompts(run_dir: Path) -> list[str]:
    lines = (run_dir / "transcript.jsonl").read_text().splitlines()
    return ["\n".join(m["content"] for m in json.loads(line)["messages"]) for line in lines]


def experience(prompt: str) -> str:
    """The prompt's experience section, up to the next section or the closing instruction."""
    body = prompt.split("## Experience from earlier runs\n", 1)[1]
    return re.split(r"\n## |\nAnswer with", body, maxsplit=1)[0]


@pytest.fixture(scope="module")
def expert_run(tmp_path_factory) -> tuple[Path, Path]:
    """One offline run of the expert agents (both stages) recording into a fresh memory."""
    root = tmp_path_factory.mktemp("expert")
    memory = root / "memory.sqlite"
    config = RunConfig(device="cpu", memory=str(memory), trials=2, timing_runs=3,
                       budget=Budget(max_candidates=4, stage1_rounds=1, stage2_rounds=1, top_k=1))
    run_optimization(PROBLEM, config, root / "run")
    return root / "run", memory


def test_every_evaluated_candidate_is_recorded(expert_run) -> None:
    run_dir, path = expert_run
    report = json.loads((run_dir / "report.json").read_text())
    observations = TransitionMemory(path).observations()
    evaluated = [c for c in report["candidates"] if not c["reused_verdict_of"]]
    assert sorted(o.candidate_id for o in observations) == sorted(c["id"] for c in evaluated)
    by_id = {o.candidate_id: o for o in observations}
    stage1 = [o for o in observations if o.stage == "algorithm_design"]
    assert stage1 and all(o.from_direction == START and o.strategy.startswith("variant ") for o in stage1)
    for o in (o for o in observations if o.stage == "hardware_tuning"):
        parent = next(c for c in report["candidates"] if c["id"] == o.candidate_id)["parent_id"]
        assert o.from_direction == by_id[parent].direction  # the move is from the parent's direction
        assert "=" in o.strategy  # one tuning value: template.PARAM=value
    assert all(o.gain is None for o in observations)  # CPU timings are not comparable: no gain recorded
    assert all(o.seconds and o.seconds > 0 for o in observations)
    assert all(o.context.op_classes == ["elementwise"] and o.context.device == "NVIDIA H200 (defaults, CPU run)"
               for o in observations)
    sha = hashlib.sha256(PROBLEM.read_bytes()).hexdigest()
    assert all(o.problem == "add_relu" and o.problem_sha == sha for o in observations)
    assert any(n.startswith(f"transition memory: {path}; this invocation recorded {len(observations)}")
               for n in report["notes"])


def test_a_later_run_prompts_with_what_earlier_runs_found(expert_run, tmp_path) -> None:
    _, path = expert_run
    before = TransitionMemory(path).count()
    model = GenericFakeChatModel(messages=iter([answer(WRONG, "none"), answer(GOOD, "algorithm-structure/fuse-elementwise-chain")]))
    config = RunConfig(llm="scripted", device="cpu", memory=str(path), expert_seeds=False, trials=2, timing_runs=3,
                       budget=Budget(designers=1, stage1_rounds=2, stage2_rounds=0))
    run_optimization(PROBLEM, config, tmp_path / "llm", chat_model=model)
    first, second = prompts(tmp_path / "llm")
    for prompt in (first, second):
        assert "## Experience from earlier runs" in prompt
        assert "- fuse around library calls: " in prompt and "  - variant fused: " in prompt
    # the run's own rejected candidate is in its history, not in its experience section
    assert "## Attempts so far" in second and experience(first) == experience(second)
    assert TransitionMemory(path).count() == before + 2
    llm = [o for o in TransitionMemory(path).observations() if o.strategy.startswith("llm:")]
    assert sorted((o.direction, o.strategy, o.accepted) for o in llm) == [
        ("restructure", "llm: algorithm-structure/fuse-elementwise-chain", True), ("restructure", "llm: no principle cited", False)]


def test_no_memory_reads_and_writes_nothing(tmp_path) -> None:
    path = tmp_path / "memory.sqlite"
    config = RunConfig(device="cpu", memory=str(path), use_memory=False, trials=2, timing_runs=3,
                       budget=Budget(max_candidates=1, stage1_rounds=1, stage2_rounds=0))
    report = run_optimization(PROBLEM, config, tmp_path / "run")
    assert not path.exists()
    assert "transition memory off (--no-memory): nothing read from or written to it" in report.notes


@pytest.mark.gpu
def test_gpu_run_profiles_its_winners_and_records_gains(tmp_path) -> None:
    """On the H200: stage winners get a profile (ncu where it works, else the roofline, said so),
    accepted candidates carry roofline evidence, and the memory records measured gains."""
    path = tmp_path / "memory.sqlite"
    config = RunConfig(device="cuda", memory=str(path),
                       budget=Budget(max_candidates=4, stage1_rounds=1, stage2_rounds=1, top_k=1))
    report = run_optimization(FIXTURES / "problems" / "add_relu_large.py", config, tmp_path / "run")
    stage1 = report.stage_summaries["algorithm_design"]
    assert stage1["evidence_source"] in ("ncu", "roofline") and stage1["evidence"]
    assert any(n.startswith(f"profiler evidence for {stage1['best_id']} ({stage1['evidence_source']})")
               for n in report.notes)
    assert all(c.evidence for c in report.candidates if c.accepted)
    accepted = [o for o in TransitionMemory(path).observations() if o.accepted]
    assert accepted and all(o.gain and o.gain > 0 for o in accepted)
    print(stage1["evidence_source"], stage1["evidence"])


def test_a_later_expert_run_starts_from_the_tuning_moves_that_paid_off(expert_run, tmp_path) -> None:
    """Tuning moves recorded with measured gains (as a GPU run records them) reach the next run's
    stage-1 designer, which renders its structure with that config from the start and says so."""
    _, path = expert_run
    memory = TransitionMemory(tmp_path / "memory.sqlite")
    recorded = TransitionMemory(path).observations()
    memory.record(recorded)
    move = next(o for o in recorded if o.stage == "hardware_tuning" and o.accepted)
    template_param, value = move.strategy.split("=", 1)
    memory.record([move.model_copy(update={"run_id": "earlier-gpu-run", "candidate_id": f"g{i}", "gain": 1.25})
                   for i in range(4)])
    config = RunConfig(device="cpu", memory=str(memory.path), trials=2, timing_runs=3,
                       budget=Budget(max_candidates=1, stage1_rounds=1, stage2_rounds=0))
    run_optimization(PROBLEM, config, tmp_path / "run")
    (folder,) = (tmp_path / "run").glob("candidates/s1r1-*")
    draft = json.loads((folder / "draft.json").read_text())
    header = json.loads(next(line for line in (folder / "candidate.py").read_text().splitlines()
                             if line.startswith("# EGG-EXPERT-CONFIG: ")).split(": ", 1)[1])
    param = template_param.split(".", 1)[1]
    assert [k["config"][param] for k in header["kernels"]][0] == json.loads(value)
    assert any(n.startswith("transition memory: ") and move.strategy in n for n in draft["notes"]), draft["notes"]
    assert "algorithm-structure/start-from-remembered-configs" in draft["principle_ids"]


def test_a_resumed_run_reads_what_the_memory_held_when_it_first_started(expert_run, tmp_path) -> None:
    """Prompts, move orders and remembered configs of a resumed run do not change because another
    run recorded meanwhile: observations created after the run first started are not read."""
    from datetime import datetime, timedelta, timezone

    from egg.analysis import analyze_problem
    from egg.graph.experience import experience_for, run_identity, strategies_for
    from egg.graph.runtime import Runtime
    from principles import load_packs

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    rid, name, since = run_identity(run_dir, "add_relu")
    assert run_identity(run_dir) == (rid, name, since)  # a resume keeps all three
    _, path = expert_run
    memory = TransitionMemory(tmp_path / "memory.sqlite")
    recorded = TransitionMemory(path).observations()
    move = next(o for o in recorded if o.stage == "hardware_tuning" and o.accepted)
    before = (datetime.fromisoformat(since) - timedelta(minutes=5)).isoformat(timespec="seconds")
    after = (datetime.fromisoformat(since) + timedelta(minutes=5)).isoformat(timespec="seconds")
    gains = [move.model_copy(update={"run_id": "earlier", "candidate_id": f"e{i}", "gain": 1.25, "created": before})
             for i in range(4)]
    memory.record(gains)
    analysis = analyze_problem(PROBLEM).model_dump(mode="json")

    def runtime(since: str | None) -> Runtime:  # a fresh process on the run directory (a resume)
        return Runtime(run_dir=run_dir, config=RunConfig(device="cpu"), problem_path=PROBLEM,
                       problem_source=PROBLEM.read_text(), harness=None, packs=load_packs([]), designers=[],
                       tuners={}, analysis=analysis, memory=memory, run_id=rid, memory_since=since)

    rt = runtime(since)
    seen = strategies_for(rt, "hardware_tuning")
    text = experience_for(rt, "hardware_tuning", move.focus)
    assert [s.strategy for s in seen] == [move.strategy] and seen[0].attempts == 4 and text
    # another run records after this one started (and this run's own observations): nothing changes,
    # in this process or a resumed one
    memory.record([g.model_copy(update={"run_id": "meanwhile", "gain": 0.5, "created": after}) for g in gains])
    memory.record([g.model_copy(update={"run_id": rid, "gain": 0.5, "created": before}) for g in gains])
    for reader in (rt, runtime(since)):
        assert strategies_for(reader, "hardware_tuning") == seen
        assert experience_for(reader, "hardware_tuning", move.focus) == text
    # a run directory from before the start time was kept reads everything but its own, at every call
    old = runtime(None)
    assert strategies_for(old, "hardware_tuning")[0].attempts == 8
    memory.record([g.model_copy(update={"run_id": "later", "candidate_id": f"l{i}"}) for i, g in enumerate(gains)])
    assert strategies_for(old, "hardware_tuning")[0].attempts == 12
