#!/usr/bin/env bash
# one device call: every `pytest -m gpu` test, verbose (names kept), the ones never or rarely run first
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1 || exit 3
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > $OUT/times.txt
FIRST="bf16_implicit_gemm or bf16_convolution or kept_keys or tuner_screens or experience or real_ncu"
timeout -s INT ${FIRST_S:-200} python3 -m pytest -m gpu -v -n 6 -p no:cacheprovider tests -k "$FIRST" > $OUT/gpu_first.log 2>&1
echo "first rc=$? $(date -u +%FT%TZ)" >> $OUT/times.txt
timeout -s INT ${REST_S:-240} python3 -m pytest -m gpu -v -n 6 -p no:cacheprovider tests -k "not ($FIRST)" > $OUT/gpu_rest.log 2>&1
echo "rest rc=$? $(date -u +%FT%TZ)" >> $OUT/times.txt
cat $OUT/times.txt
for f in $OUT/gpu_first.log $OUT/gpu_rest.log; do
  grep -E ' (PASSED|FAILED|ERROR|SKIPPED)' $f | sed -E 's/^.*::(.*) (PASSED|FAILED|ERROR|SKIPPED).*/\2 \1/' | sort | uniq -c | awk '{print $2}' | sort | uniq -c
  grep -E ' (FAILED|ERROR)' $f | head -10; tail -2 $f
done
