"""`egg memory show|export|import|clear` and the memory section of `egg prompt`."""

from __future__ import annotations

import json
from pathlib import Path

import egg.cli.main as cli
from egg.device import device_facts
from egg.memory import Context, Observation, TransitionMemory

PROBLEM = Path(__file__).parents[1] / "fixtures" / "problems" / "add_relu.py"
# what the analysis finds for add_relu, on this machine's device (the H200 defaults on a CPU)
ADD_RELU = Context(op_classes=["elementwise"], bottleneck="latency", dtypes=["float32"],
                   device=Context.from_analysis({}, device_facts()).device, anchors=[])
OTHER = Context(op_classes=["matmul"], bottleneck="compute", dtypes=["bfloat16"], device="NVIDIA H200")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(["--log-level", "error", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def filled(path: Path) -> TransitionMemory:
    memory = TransitionMemory(path)

    def o(i: int, strategy: str, gain: float | None, context: Context = ADD_RELU, **kw) -> Observation:
        return Observation(run_id="r1", candidate_id=f"c{i}", problem="p", context=context, stage="hardware_tuning",
                           focus="parallel_mapping", direction="remap work to programs", strategy=strategy,
                           from_direction="fuse around library calls", accepted=gain is not None, gain=gain,
                           seconds=1.5, principle_ids=["parallel-mapping/fill-the-machine-in-waves"], **kw)

    memory.record([o(1, "pointwise.XBLOCK=512", 1.3), o(2, "pointwise.XBLOCK=512", 1.25),
                   o(3, "pointwise.XBLOCK=4096", None, stage_failed="correctness"),
                   o(4, "matmul.GROUP_M=8", 1.1, context=OTHER)])
    return memory


def test_show_for_a_problem(capsys, tmp_path) -> None:
    path = tmp_path / "m.sqlite"
    filled(path)
    code, out, _ = run(capsys, "memory", "show", str(PROBLEM), "--memory", str(path))
    assert code == 0
    assert f"memory:   {path} (4 evaluated candidates)" in out
    assert "hardware_tuning/parallel_mapping: remap work to programs: 3 tries (3 on this kind of problem)" in out
    lines = out.splitlines()
    assert lines.index(next(l for l in lines if "pointwise.XBLOCK=512" in l)) < lines.index(
        next(l for l in lines if "pointwise.XBLOCK=4096" in l))
    assert "matmul.GROUP_M=8" not in out  # another kind of problem
    code, out, _ = run(capsys, "memory", "show", "--memory", str(path), "--json")
    assert json.loads(out)["observations"] == 4


def test_export_import_round_trip(capsys, tmp_path) -> None:
    source, target, shared = tmp_path / "a.sqlite", tmp_path / "b.sqlite", tmp_path / "team.json"
    filled(source)
    assert run(capsys, "memory", "export", str(shared), "--memory", str(source))[1].startswith(
        f"exported 4 evaluated candidates to {shared}")
    code, out, _ = run(capsys, "memory", "import", str(shared), "--memory", str(target))
    assert code == 0 and out.startswith(f"imported 4 evaluated candidates into {target} (0 were already there)")
    assert run(capsys, "memory", "import", str(shared), "--memory", str(target))[1].startswith("imported 0")
    dump = lambda p: [o.model_dump() for o in TransitionMemory(p).observations()]  # noqa: E731
    assert dump(source) == dump(target)


def test_clear_needs_yes(capsys, tmp_path) -> None:
    path = tmp_path / "m.sqlite"
    filled(path)
    code, _, err = run(capsys, "memory", "clear", "--memory", str(path))
    assert code == 2 and "add --yes" in err and err.count("\n") == 1
    assert TransitionMemory(path).count() == 4
    assert run(capsys, "memory", "clear", "--yes", "--memory", str(path))[1].startswith("removed 4")
    assert TransitionMemory(path).count() == 0


def test_prompt_shows_the_memory_section(capsys, tmp_path) -> None:
    path = tmp_path / "m.sqlite"
    filled(path)
    argv = ["prompt", str(PROBLEM), "--stage", "hardware_tuning", "--focus", "parallel_mapping", "--memory", str(path)]
    code, out, _ = run(capsys, *argv)
    assert code == 0
    section = out.split("## Experience from earlier runs", 1)[1]
    assert "- remap work to programs: 3 tries" in section
    assert "  - pointwise.XBLOCK=512: 2 tries (2 on this kind of problem), 0% rejected, 1.27x gain" in section
    assert "profiler's bottleneck statement" in out
    assert "## Experience from earlier runs" not in run(capsys, *argv, "--no-memory")[1]
    tiling = run(capsys, "prompt", str(PROBLEM), "--stage", "hardware_tuning", "--focus", "tiling", "--memory",
                 str(path))[1]
    assert "## Experience from earlier runs" not in tiling  # nothing recorded for that focus
