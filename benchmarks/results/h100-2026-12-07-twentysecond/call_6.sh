#!/usr/bin/env bash
# device call 6 (twenty-second session): the depthwise stencil (`conv-depthwise`, and the separable
# block's implicit GEMM fed by it) judged on KernelBench level 1 #82, #86 and #84 against eager and
# torch.compile (cuDNN / ATen's depthwise kernel); every eval bounded by what is left of BUDGET seconds
set -u
start=$(date +%s); BUDGET=${BUDGET:-300}
left() { echo $(( BUDGET - ($(date +%s) - start) - 20 )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1 || exit 3
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
D=benchmarks/results/h100-2026-12-07-twentysecond/renders; K=.kb/KernelBench/level1; L=/tmp/logs6; rm -rf $L; mkdir -p $L
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > $L/times.txt
ev() {  # problem render tag
  local t; t=$(left); [ "$t" -gt 90 ] && t=90; [ "$t" -lt 30 ] && { echo "eval $3 skipped (budget)" >> $L/times.txt; return; }
  timeout -k 5 -s INT $t python3 -m egg eval $1 $2 --shapes default --json > $L/eval_$3.json 2> $L/eval_$3.err
  echo "eval $3 rc=$? $(date -u +%FT%TZ)" >> $L/times.txt
  tar czf $OUT/logs6.tgz -C /tmp logs6
}
ev $K/82_conv_depthwise_2D_square_input_square_kernel.py $D/l1_82_conv-depthwise.py l1_82_depthwise
ev $K/86_conv_depthwise_separable_2D.py $D/l1_86_conv-gemm.py l1_86_gemm
ev $K/86_conv_depthwise_separable_2D.py $D/l1_86_conv-depthwise.py l1_86_depthwise
ev $K/84_conv_depthwise_2D_asymmetric_input_square_kernel.py $D/l1_84_conv-depthwise.py l1_84_depthwise
cat $L/times.txt
python3 - <<'PY'
import glob, json, os
for f in sorted(glob.glob("/tmp/logs6/eval_*.json")):
    try:
        d = json.load(open(f))
        print(os.path.basename(f), d.get("accepted"), d.get("candidate_ms"), d.get("generated_gpu_ms"), d.get("compile_ms"), d.get("eager_ms"), d.get("reasons"))
    except Exception as e:
        print(os.path.basename(f), "unreadable", e)
PY
