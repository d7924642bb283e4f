"""Does the judge's timing protocol count host time on small problems? (next-lease check)

On the H200 (2026-12-01) the judge timed torch.compile's rotary embedding at 0.075 to 0.229 ms
across one run's candidates, while Inductor's kernel takes about 0.026 ms and eager stayed at a
steady 0.28 ms. The suspicion: per timed call the host refills the inputs, zeroes the L2-flush
buffer, then runs Dynamo's guards and Inductor's wrapper. When that host work takes longer than the
GPU's flush, the GPU idles between the start event and the first kernel, and the gap is timed.

For eager, torch.compile and (with ``--candidate``) a candidate's ``ModelNew``, in one process,
this times three ways and writes the medians:

- ``judge_ms``: :func:`egg.evaluate.timing.time_calls`, exactly as the judge times eager and
  compile (with the protocol's spin between the flush and the start event, ``EGG_TIMING_SPIN_US``);
- ``no_spin_ms``: the same without the spin (the protocol before 2026-12-01, fourth session);
- ``do_bench``: ``triton.testing.do_bench`` (its own L2 clearing), for a second opinion;

plus ``host_ms``, the host time of issuing one call while the GPU is busy. If ``no_spin_ms``
exceeds ``judge_ms`` by about ``host_ms`` minus the flush time, the protocol without the spin
counts host time.

    python benchmarks/timing_protocol_probe.py --problem benchmarks/transformers/llama_rotary.py \\
        --candidate runs/.../best.py --out timing_protocol.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from egg.evaluate import timing  # noqa: E402


def _load(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # triton's jit and dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _host_ms(fn: Callable[[], Any], calls: int = 50) -> float:
    """Host time of issuing one call with the GPU kept busy (a spin queued first)."""
    times = []
    for _ in range(calls):
        torch.cuda._sleep(2_000_000)  # ~1 ms of GPU work: the call below only queues
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    torch.cuda.synchronize()
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--problem", type=Path, required=True)
    parser.add_argument("--candidate", type=Path, default=None, help="a candidate file with ModelNew")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    from triton.testing import do_bench

    device = torch.device("cuda")
    problem = _load(args.problem, "problem")
    torch.manual_seed(0)
    init = problem.get_init_inputs()
    torch.manual_seed(0)
    model = problem.Model(*init).to(device).eval()
    inputs = [t.to(device) if isinstance(t, torch.Tensor) else t for t in problem.get_inputs()]
    fresh = [t.clone() if isinstance(t, torch.Tensor) else t for t in inputs]

    def refill() -> None:  # fresh values into the same buffers, as the judge does
        for buf, src in zip(inputs, fresh):
            if isinstance(buf, torch.Tensor):
                buf.copy_(src)

    paths: dict[str, Callable[[], Any]] = {"eager": lambda: model(*inputs)}
    compiled = torch.compile(model)
    paths["compile"] = lambda: compiled(*inputs)
    if args.candidate:
        torch.manual_seed(0)
        cand = _load(args.candidate, "candidate").ModelNew(*init).to(device).eval()
        cand.load_state_dict(model.state_dict(), strict=False)
        paths["candidate"] = lambda: cand(*inputs)
    rows = {}
    with torch.no_grad():
        for name, fn in paths.items():
            bare = timing.time_calls(fn, refill, args.runs, 10, device, spin=False)
            judge = timing.time_calls(fn, refill, args.runs, 10, device)
            rows[name] = {"judge_ms": statistics.median(judge), "no_spin_ms": statistics.median(bare),
                          "do_bench_ms": do_bench(fn, warmup=25, rep=200), "host_ms": _host_ms(fn)}
            print(json.dumps({name: rows[name]}), flush=True)
    result = {"benchmark": "timing_protocol_probe", "problem": str(args.problem),
              "candidate": str(args.candidate) if args.candidate else None,
              "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "command": " ".join(sys.argv),
              "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "flush_ms": timing.flush_ms(device), "spin_us": timing.SPIN_US, "rows": rows}
    args.out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
