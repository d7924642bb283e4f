#!/usr/bin/env bash
# the next device call for the chained attention (eighteenth session, not yet run): the chained GPU
# tests, then the judge on the chained renders (default, BLOCK_M 64 x 4 and 8 warps) and the measured
# halves render (0.2138 ms on an H100, 2026-12-07) in one job; outputs in one tarball (8 files a call)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1 || exit 3
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
D=benchmarks/results/cpu/ptx_2026-12-07-eighteenth; L=/tmp/logs; mkdir -p $L  # outside $OUT: only the tarball comes back
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > $L/times.txt
timeout -s INT ${T1:-150} python3 -m pytest -m gpu -v -n 2 -p no:cacheprovider tests/agents/expert/test_gpu.py -k chained > $L/gpu_chained.log 2>&1
echo "gpu rc=$? $(date -u +%FT%TZ)" >> $L/times.txt
# the halves render is call 1's (benchmarks/results/h100-2026-12-07-eighteenth/renders), timed again beside these
for f in $D/ssa_chained.py $D/ssa_chained_bm64_w4.py $D/ssa_chained_bm64_w8.py \
         benchmarks/results/h100-2026-12-07-eighteenth/renders/ssa_triton-matmul-halves.py; do
  r=$(basename $f .py)
  timeout -s INT ${TE:-70} python3 -m egg eval workloads/short_seq_attention.py $f --shapes default --json > $L/eval_$r.json 2> $L/eval_$r.err
  echo "eval $r rc=$? $(date -u +%FT%TZ)" >> $L/times.txt
done
tar czf $OUT/logs.tgz -C /tmp logs
cat $L/times.txt; grep -E " (PASSED|FAILED|ERROR)" $L/gpu_chained.log | tail -5
python3 - <<'PY'
import glob, json, os
for f in sorted(glob.glob("/tmp/logs/eval_*.json")):
    try:
        d = json.load(open(f))
        print(os.path.basename(f), d.get("accepted"), d.get("candidate_ms"), d.get("compile_ms"), d.get("eager_ms"), d.get("reasons"))
    except Exception as e:
        print(os.path.basename(f), "unreadable", e)
PY
