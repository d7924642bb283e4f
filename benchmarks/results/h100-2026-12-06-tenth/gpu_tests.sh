#!/usr/bin/env bash
# GPU tests at the working tree (run by the device tool)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1 || exit 3
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; git log -1 --format=%H 2>/dev/null; } > $OUT/times.txt
timeout -s INT ${TESTS_S:-520} python3 -m pytest -m gpu -v -n 3 -p no:cacheprovider ${TESTS:-tests/} > $OUT/gpu_tests.log 2>&1
echo "rc=$?" >> $OUT/times.txt; date -u +%FT%TZ >> $OUT/times.txt
grep -E "PASSED|FAILED|ERROR|SKIPPED" $OUT/gpu_tests.log | sed -E 's/^\[gw[0-9]\] \[ *[0-9]+%\] //' | sort | uniq -c | sort -rn | head -80
tail -3 $OUT/gpu_tests.log
