"""Does torch.compile itself pass the judge's bf16 tolerance against eager? (evidence for the bf16 row
of egg/tolerance.py). Compares eager and torch.compile (default mode) outputs of a problem file with
the judge's comparator, under the current bf16 tolerance and under torch.testing's bf16 defaults.

    python benchmarks/bf16_tolerance_probe.py benchmarks/transformers/llama_decoder_layer.py --out probe.json
"""

from __future__ import annotations

import argparse
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


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("problem", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location("problem", args.problem)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    torch.manual_seed(0)
    model = mod.Model(*mod.get_init_inputs()).cuda().eval()
    compiled = torch.compile(model)
    tables = {"egg_default": dict(DEFAULT_TOLERANCES),
              "torch_testing_bf16": {**DEFAULT_TOLERANCES, "bfloat16": Tolerance(atol=1e-5, rtol=1.6e-2)},
              "atol1e-2_rtol1.6e-2": {**DEFAULT_TOLERANCES, "bfloat16": Tolerance(atol=1e-2, rtol=1.6e-2)}}
    rows = []
    for seed in range(args.seeds):
        torch.manual_seed(1000 + seed)
        inputs = [t.cuda() for t in mod.get_inputs()]
        with torch.no_grad():
            ref = model(*inputs)
            got = compiled(*inputs)
        row = {"seed": 1000 + seed}
        for name, table in tables.items():
            cmp = compare_outputs(ref, got, table)
            row[name] = {"ok": cmp.ok, "reason": cmp.reason, "max_abs": cmp.max_abs}
        rows.append(row)
        print(json.dumps(row), flush=True)
    args.out.write_text(json.dumps({"benchmark": "bf16_tolerance_probe", "problem": str(args.problem),
                                    "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                                    "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                                    "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
