#!/usr/bin/env bash
# validation call: new reduction loops (peeled blocks, ftz exp in lane sums) and split-K without masks
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1 || exit 3
export PYTHONUNBUFFERED=1
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } > $OUT/call_times.txt
CE=workloads/cross_entropy_large_vocab.py
# A/B in one call: the old code (.frozen95 = 75d131c) and the working tree, same grid, alternating
for round in ${ROUNDS:-1}; do
  ( cd .frozen95 && PYTHONPATH=$PWD:/tmp/site timeout 120 python3 benchmarks/config_probe.py $CE --reps 15 --grid '[{}, {"ONLINE_MAX": "row"}]' --out $OUT/ce_old_$round.json ) > $OUT/ce_old_$round.log 2>&1
  PYTHONPATH=$PWD:/tmp/site timeout 120 python3 benchmarks/config_probe.py $CE --reps 15 --grid '[{}, {"ONLINE_MAX": "row"}]' --out $OUT/ce_new_$round.json > $OUT/ce_new_$round.log 2>&1
  echo "ce round $round $(date -u +%FT%TZ)" >> $OUT/call_times.txt
done
PYTHONPATH=$PWD:/tmp/site timeout 150 python3 benchmarks/config_probe.py workloads/int4_weight_only_linear.py --template matmul --reps 30 \
  --grid '[{}, {"SPLIT_K": 2}, {"SPLIT_K": 4}, {"SPLIT_K": 8}, {"BLOCK_N": 32}, {"BLOCK_N": 32, "SPLIT_K": 2}, {"BLOCK_N": 32, "SPLIT_K": 4}, {"BLOCK_N": 128, "SPLIT_K": 4}, {"num_warps": 8}, {"SPLIT_K": 4, "num_stages": 3}]' \
  --out $OUT/probe_int4.json > $OUT/probe_int4.log 2>&1
echo "int4 $(date -u +%FT%TZ)" >> $OUT/call_times.txt
PYTHONPATH=$PWD:/tmp/site timeout -s INT ${TESTS_S:-150} python3 -m pytest -m gpu -v -n 3 -p no:cacheprovider tests/agents/expert/test_gpu.py \
  -k "online or cross_entropy or causal_softmax or topk or int4 or int8 or split_k or kthvalue" > $OUT/gpu_tests.log 2>&1
echo "tests rc=$? $(date -u +%FT%TZ)" >> $OUT/call_times.txt
grep -E 'passed|failed' $OUT/gpu_tests.log | tail -2
for f in $OUT/ce_*_?.log $OUT/probe_int4.log; do echo "== $f"; grep -E '^\S+\s+[\{n]' $f | head -12; done
