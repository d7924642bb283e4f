#!/usr/bin/env bash
# device call 2 (nineteenth session, on the warm machine with 157 device seconds left): GPU tests call 1's
# budget did not reach, output in $OUT/gpu2.log (call2_gpu.log here)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1; export PYTHONPATH=$PWD:/tmp/site; timeout -s INT 110 python3 -m pytest -m gpu -v -n 8 -p no:cacheprovider tests -k "welford or phase_gemms or implicit or packed_weights or cuda_build" > $OUT/gpu2.log 2>&1; echo rc=$?
