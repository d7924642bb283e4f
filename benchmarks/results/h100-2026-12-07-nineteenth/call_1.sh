#!/usr/bin/env bash
# device call 1 (nineteenth session): every GPU test not run since it last changed (chained attention,
# welford / online-softmax structures, phase / implicit GEMMs, packed weights, cuda_build), then the judge
# on the three chained renders and the halves render in one job; logs in one tarball (8 files a call)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1 || exit 3
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
D=benchmarks/results/cpu/ptx_2026-12-07-eighteenth; L=/tmp/logs; mkdir -p $L
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > $L/times.txt
K="softmax_online_nan or welford or phase_gemms or implicit or packed_weights or cuda_build or chained"
timeout -s INT ${T1:-230} python3 -m pytest -m gpu -v -n 8 -p no:cacheprovider tests -k "$K" > $L/gpu.log 2>&1
echo "gpu rc=$? $(date -u +%FT%TZ)" >> $L/times.txt
for f in $D/ssa_chained.py $D/ssa_chained_bm64_w4.py $D/ssa_chained_bm64_w8.py \
         benchmarks/results/h100-2026-12-07-eighteenth/renders/ssa_triton-matmul-halves.py; do
  r=$(basename $f .py)
  timeout -s INT ${TE:-65} python3 -m egg eval workloads/short_seq_attention.py $f --shapes default --json > $L/eval_$r.json 2> $L/eval_$r.err
  echo "eval $r rc=$? $(date -u +%FT%TZ)" >> $L/times.txt
done
tar czf $OUT/logs.tgz -C /tmp logs
cat $L/times.txt; grep -cE " PASSED" $L/gpu.log; grep -E " (FAILED|ERROR)" $L/gpu.log | head -10; tail -1 $L/gpu.log
python3 - <<'PY'
import glob, json, os
for f in sorted(glob.glob("/tmp/logs/eval_*.json")):
    try:
        d = json.load(open(f))
        print(os.path.basename(f), d.get("accepted"), d.get("candidate_ms"), d.get("compile_ms"), d.get("eager_ms"), d.get("reasons"))
    except Exception as e:
        print(os.path.basename(f), "unreadable", e)
PY
