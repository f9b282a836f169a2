#!/bin/sh
# The cost of one of the project's own test files (issue 33 #6: the whole suite in <= 8 min
# under .ci/run), run from a clone with its venv, as the CI runs it but alone and without
# xdist.  Time whole processes from outside, interleaving two clones (e.g. main and a branch):
#   farm-bench -n 3 --timeout 900 --vs 'sh benchmarks/bench_test_file.sh MAIN_CLONE MAIN_VENV tests/test_x.py' \
#     -- sh benchmarks/bench_test_file.sh BRANCH_CLONE BRANCH_VENV tests/test_x.py
# CPU seconds (user + sys, inner pytest processes included) are the figure that adds up over
# the CI's two workers; the wall time also counts what other jobs on the machine take.
set -e
clone="${1:?usage: bench_test_file.sh CLONE VENV TEST_FILE...}"
venv="${2:?usage: bench_test_file.sh CLONE VENV TEST_FILE...}"
shift 2
cd "$clone"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider -p no:randomly "$@"
