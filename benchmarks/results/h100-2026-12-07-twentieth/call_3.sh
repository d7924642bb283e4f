#!/usr/bin/env bash
# device call 3 (twentieth session): one block's whole head dim in one K step (BLOCK_K = K: the K loop
# folds away and the loop over N is the innermost, which Triton pipelines) with and without the
# masked-block skip (whose loads under the `if` Triton does not pipeline), and a hand edit bounding the
# loop by a mask pre-pass instead (no branch in the loop), judged; bounded by BUDGET
set -u
start=$(date +%s); BUDGET=${BUDGET:-280}
left() { echo $(( BUDGET - ($(date +%s) - start) - 15 )); }
bounded() { local t=$1; local l; l=$(left); [ "$l" -lt "$t" ] && t=$l; echo $t; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1 || exit 3
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
D=benchmarks/results/h100-2026-12-07-twentieth/renders; L=/tmp/logs; mkdir -p $L
C=tests/frontend/corpus/attention_mask
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > $L/times.txt
ev() {  # problem render tag
  local t; t=$(bounded 55); [ "$t" -lt 20 ] && { echo "eval $3 skipped (budget)" >> $L/times.txt; return; }
  timeout -s INT $t python3 -m egg eval $1 $2 --shapes default --json > $L/eval_$3.json 2> $L/eval_$3.err
  echo "eval $3 rc=$? $(date -u +%FT%TZ)" >> $L/times.txt
}
ev $C/hf_eager_additive.py $D/hf_noskip_bk128.py hf_noskip_bk128
ev $C/hf_eager_additive.py $D/hf_prepass_bk128.py hf_prepass_bk128
ev $C/hf_eager_additive.py $D/hf_skip_bk128.py hf_skip_bk128
ev $C/nanogpt_tril.py $D/nanogpt_noskip_bk64.py nanogpt_noskip_bk64
ev $C/nanogpt_tril.py $D/nanogpt_skip_bk64.py nanogpt_skip_bk64
tar czf $OUT/logs.tgz -C /tmp logs
cat $L/times.txt
python3 - <<'PY'
import glob, json, os
for f in sorted(glob.glob("/tmp/logs/eval_*.json")):
    try:
        d = json.load(open(f))
        print(os.path.basename(f), d.get("accepted"), d.get("candidate_ms"), d.get("generated_gpu_ms"), d.get("compile_ms"), d.get("eager_ms"), d.get("reasons"))
    except Exception as e:
        print(os.path.basename(f), "unreadable", e)
PY
