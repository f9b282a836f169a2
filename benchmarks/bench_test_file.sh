#!/bin/sh
# The cost of one of the project's own test files (issue 33 #6: the whole suite in <= 8 min
# under .ci/run), run from a clone with its venv, as the CI runs it but alone and without
# xdist.  Time whole processes from outside, interleaving two clones (e.g. main and a branch):
#   farm-bench -n 3 --timeout 900 --vs 'sh benchmarks/bench_test_file.sh MAIN_CLONE MAIN_VENV tests/test_x.py' \
#     -- sh benchmarks/bench_test_file.sh BRANCH_CLONE BRANCH_VENV tests/test_x.py
# CPU seconds (user + sys, inner pytest processes included) are the figure that adds up over
# the CI's two workers; the wall time also counts what other jobs on the machine take.
# 2026-11-28, 2c (loaded by other jobs), 3 interleaved pairs, s12-ci against main 0b43c66:
#   tests/test_sequential_runs.py (inner runs in-process): cpu median 30.8 s -> 11.7 s, A/B cpu 0.379
#   tests/test_markdown_summary.py (inner runs in-process): cpu 29.9 s -> 30.1 s, A/B cpu 1.00,
#   wall 38.7 s -> 31.2 s (A/B wall 0.81)
set -e
clone="${1:?usage: bench_test_file.sh CLONE VENV TEST_FILE...}"
venv="${2:?usage: bench_test_file.sh CLONE VENV TEST_FILE...}"
shift 2
cd "$clone"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider -p no:randomly "$@"
