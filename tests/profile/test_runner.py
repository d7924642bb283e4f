"""The profiling run: ncu over a separate process when it works, the roofline path when it does not."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from egg.device import default_facts, device_facts
from egg.profile import ncu_command, profile_candidate

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"
PROBLEM = REPO / "tests" / "fixtures" / "problems" / "add_relu.py"
CANDIDATE = REPO / "tests" / "fixtures" / "candidates" / "add_relu_triton.py"
ANALYSIS = {"min_bytes": 3 * 4 * 2**20, "flops": 2**21, "op_classes": ["elementwise"],
            "outputs": [{"name": "out", "shape": [1024, 1024], "dtype": "float32"}]}


def fake_ncu(tmp_path: Path, *, fixture: str | None, exit_code: int = 0, stderr: str = "") -> Path:
    """An executable standing in for ncu: it records its arguments and writes a recorded CSV to
    --log-file, as ncu does."""
    script = tmp_path / "ncu"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "args = sys.argv[1:]\n"
        f"open({str(tmp_path / 'argv.json')!r}, 'w').write(json.dumps(args))\n"
        f"fixture = {str(FIXTURES / fixture) if fixture else None!r}\n"
        "if fixture:\n"
        "    open(args[args.index('--log-file') + 1], 'w').write(open(fixture).read())\n"
        f"sys.stderr.write({stderr!r})\n"
        f"sys.exit({exit_code})\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def profile(tmp_path: Path, **kwargs):
    return profile_candidate(PROBLEM, CANDIDATE, analysis=ANALYSIS, candidate_ms=0.01, device=default_facts(),
                             out_dir=tmp_path / "profile", **kwargs)


def test_ncu_evidence_comes_with_the_roofline_line(tmp_path) -> None:
    evidence = profile(tmp_path, ncu=str(fake_ncu(tmp_path, fixture="ncu_raw_rms_norm.csv")))
    assert evidence.source == "ncu" and evidence.statement.startswith("memory-bound at 0.82 of DRAM peak")
    assert any(n.startswith("roofline: latency-bound") for n in evidence.notes)
    argv = json.loads((tmp_path / "argv.json").read_text())
    assert argv[argv.index("--nvtx-include") + 1] == "egg-candidate/"
    assert argv[argv.index("-m") + 1] == "egg.profile.target" and str(CANDIDATE) in argv
    assert (tmp_path / "profile" / "ncu.csv").is_file() and (tmp_path / "profile" / "ncu.log").is_file()


def test_without_permission_the_roofline_path_says_why(tmp_path) -> None:
    script = fake_ncu(tmp_path, fixture="ncu_no_permission.txt", exit_code=1)
    evidence = profile(tmp_path, ncu=str(script))
    assert evidence.source == "roofline"
    assert any("ncu evidence unavailable, roofline only: ==ERROR== ERR_NVGPUCTRPERM" in n for n in evidence.notes)


def test_a_crashing_profiled_process_is_reported(tmp_path) -> None:
    script = fake_ncu(tmp_path, fixture=None, exit_code=3, stderr="==ERROR== The application returned an error code (1).\n")
    evidence = profile(tmp_path, ncu=str(script))
    assert evidence.source == "roofline"
    assert any("ncu failed: ==ERROR== The application returned an error code (1)." in n for n in evidence.notes)


def test_missing_ncu_and_roofline_only(tmp_path) -> None:
    evidence = profile(tmp_path, ncu=str(tmp_path / "no-such-ncu"))
    assert evidence.source == "roofline" and any("cannot run ncu" in n for n in evidence.notes)
    evidence = profile(tmp_path, use_ncu=False)
    assert evidence.notes[-1] == "ncu not requested (--profile roofline): roofline evidence only"


def test_the_command_profiles_one_call_of_the_candidate(tmp_path) -> None:
    command = ncu_command("ncu", PROBLEM, CANDIDATE, tmp_path / "out.csv", shape_set="small", seed=3)
    assert command[:3] == ["ncu", "--csv", "--page"] and "--print-units" in command
    assert command[-4:] == ["--shape-set", "small", "--seed", "3"]


@pytest.mark.gpu
def test_real_ncu_on_the_gpu(tmp_path) -> None:
    """On the H200: real ncu over the real target process (skipped where ncu is missing)."""
    from egg.profile import find_ncu

    if find_ncu() is None:
        pytest.skip("ncu is not installed here")
    evidence = profile_candidate(PROBLEM, CANDIDATE, analysis=ANALYSIS, candidate_ms=0.01, device=device_facts(),
                                 out_dir=tmp_path / "profile")
    print(evidence.statement, evidence.notes)
    assert evidence.source == "ncu", evidence.notes
    assert evidence.kernels and evidence.kernels >= 1
