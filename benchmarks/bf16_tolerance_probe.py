"""Does torch.compile itself pass the judge's bf16 tolerance against eager? (evidence for the bf16 row
of egg/tolerance.py). Compares eager and torch.compile (default mode) outputs of a problem file with
the judge's comparator, under the current bf16 tolerance and under torch.testing's bf16 defaults.

With ``--candidate FILE`` (repeatable; a candidate's ``ModelNew``, built the way the judge builds it)
each candidate is compared too, and eager, torch.compile and every candidate are also compared with
an fp32 run of the same model on the same inputs: "is the candidate less accurate than eager, or
only differently rounded?"

    python benchmarks/bf16_tolerance_probe.py benchmarks/transformers/llama_decoder_layer.py --out probe.json
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from egg.evaluate.correctness import compare_outputs  # noqa: E402
from egg.tolerance import DEFAULT_TOLERANCES, Tolerance  # noqa: E402


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses and triton's jit look their module up
    spec.loader.exec_module(mod)
    return mod


def _vs_fp32(fp32: torch.Tensor, got: torch.Tensor, table: dict) -> dict:
    """Error of a bf16 output against the fp32 run: the accuracy each path actually has."""
    err = (got.float() - fp32).abs()
    tol = table["bfloat16"]
    outside = int((err > tol.atol + tol.rtol * fp32.abs()).sum())
    return {"max_abs": float(err.max()), "mean_abs": float(err.mean()), "outside_tolerance": outside}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("problem", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--candidate", type=Path, action="append", default=[], help="candidate file (repeatable)")
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    mod = _load(args.problem, "problem")
    torch.manual_seed(0)
    init = mod.get_init_inputs()
    torch.manual_seed(0)
    model = mod.Model(*init).to(args.device).eval()
    compiled = torch.compile(model)
    fp32 = copy.deepcopy(model).float()
    candidates = {}
    for i, path in enumerate(args.candidate):
        torch.manual_seed(0)
        cand = _load(path, f"candidate_{i}").ModelNew(*init).to(args.device).eval()
        cand.load_state_dict(model.state_dict(), strict=False)  # same weights whatever the build order
        candidates[str(path)] = cand
    tables = {"egg_default": dict(DEFAULT_TOLERANCES),
              "torch_testing_bf16": {**DEFAULT_TOLERANCES, "bfloat16": Tolerance(atol=1e-5, rtol=1.6e-2)},
              "atol1e-2_rtol1.6e-2": {**DEFAULT_TOLERANCES, "bfloat16": Tolerance(atol=1e-2, rtol=1.6e-2)}}
    rows = []
    for seed in range(args.seeds):
        torch.manual_seed(1000 + seed)
        inputs = [t.to(args.device) for t in mod.get_inputs()]
        with torch.no_grad():
            ref = model(*inputs)
            got = compiled(*inputs)
            exact = fp32(*[t.float() if t.is_floating_point() else t for t in inputs])
            outs = {name: c(*inputs) for name, c in candidates.items()}
        row = {"seed": 1000 + seed}
        for name, table in tables.items():
            cmp = compare_outputs(ref, got, table)
            row[name] = {"ok": cmp.ok, "reason": cmp.reason, "max_abs": cmp.max_abs}
        one = lambda o: o[0] if isinstance(o, (tuple, list)) else o  # noqa: E731 - the layer's hidden states
        row["vs_fp32"] = {"eager": _vs_fp32(one(exact), one(ref), tables["egg_default"]),
                          "compile": _vs_fp32(one(exact), one(got), tables["egg_default"])}
        for name, out in outs.items():
            cmp = compare_outputs(ref, out, tables["egg_default"])
            row.setdefault("candidates", {})[name] = {"ok": cmp.ok, "reason": cmp.reason, "max_abs": cmp.max_abs}
            row["vs_fp32"][name] = _vs_fp32(one(exact), one(out), tables["egg_default"])
        rows.append(row)
        print(json.dumps(row), flush=True)
    args.out.write_text(json.dumps({"benchmark": "bf16_tolerance_probe", "problem": str(args.problem),
                                    "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                                    "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else args.device,
                                    "torch": torch.__version__,
                                    "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
