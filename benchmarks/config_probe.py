"""Time one problem's expert candidate under configs the tuning space may not hold (GPU).

The tuners' screen (agents/expert/screen.py) searches the packs' values; this asks what a value
outside them would give, through the same screen (the judge's build, gross-error check and timing
protocol, under the GPU lock), before a template's defaults or space change. Every config is timed
in one round (no halving), ``--reps`` calls each after a compile-and-check call.

    python benchmarks/config_probe.py PROBLEM --template reduction \\
        --grid '[{}, {"PERSISTENT": false, "RBLOCK": 1, "XBLOCK": 1024}]' --out probe.json

``{}`` is the default config. A config sets its keys on every kernel the named template renders.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents.expert.agents import program_for  # noqa: E402
from agents.expert.design import render  # noqa: E402
from agents.expert.screen import PARENT, screen  # noqa: E402
from agents.expert.templates import template_for  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("problems", nargs="+", type=Path)
    parser.add_argument("--template", default="reduction", help="the template whose kernels get each config")
    parser.add_argument("--grid", required=True, help="JSON list of config dicts ({} = the default)")
    parser.add_argument("--variant", default=None, help="variant id (default: the first)")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    grid = json.loads(args.grid)
    results = []
    for path in args.problems:
        program = program_for(str(path))
        variant = program.variant(args.variant) if args.variant else program.variants[0]
        sources, configs = {}, {}
        for i, cfg in enumerate(grid):  # the first config is the screen's baseline, its PARENT
            key = PARENT if i == 0 else f"c{i}"
            overrides = {k.name: dict(cfg) for k in variant.program.kernels if template_for(k).name == args.template}
            try:
                sources[key] = render(program, variant, args.device, overrides).source
                configs[key] = cfg
            except Exception as exc:  # noqa: BLE001 - a probe reports what does not render
                results.append({"problem": path.stem, "config": cfg, "error": repr(exc)[:200]})
        report = screen(path, sources, keep=len(sources), seconds=600, device=args.device, reps=args.reps)
        if report.error:
            results.append({"problem": path.stem, "error": report.error})
            continue
        for e in report.entries:
            results.append({"problem": path.stem, "variant": variant.id, "config": configs.get(e.key),
                            "status": e.status, "median_ms": e.medians_ms[-1] if e.medians_ms else None,
                            "detail": e.detail})
            print(f"{path.stem[:40]:40} {json.dumps(configs.get(e.key)):70} {e.status:12} "
                  f"{e.medians_ms[-1] if e.medians_ms else float('nan'):.4f}", flush=True)
        args.out.write_text(json.dumps(results, indent=1))
    args.out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
