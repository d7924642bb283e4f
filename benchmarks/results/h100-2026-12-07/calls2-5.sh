#!/usr/bin/env bash
# GPU tests in one call: FILES (pytest paths) with -k K, for S seconds
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1 || exit 3
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } > $OUT/tests_times.txt
timeout -s INT ${S:-400} python3 -m pytest -m gpu -v -n ${N:-3} -p no:cacheprovider ${FILES} ${K:+-k "$K"} > $OUT/gpu_tests2.log 2>&1
echo "tests rc=$? $(date -u +%FT%TZ)" >> $OUT/tests_times.txt
cat $OUT/tests_times.txt
grep -E 'PASSED|FAILED|ERROR|passed|failed|skipped' $OUT/gpu_tests2.log | sed -E 's/^.*::(.*) (PASSED|FAILED|ERROR|SKIPPED).*/\2 \1/' | sort | uniq -c | sort -rn | head -70
