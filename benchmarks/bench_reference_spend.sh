#!/bin/sh
# One offline run of a suite in a fresh folder: the workload that times the reference
# tokenizer counting every reply of the reference agents (issue 34), against the same run
# of an older checkout (PYTHONPATH=DIR, set up as benchmarks/bench_offline_suites.py
# --before describes).  Usage, from the repository root with its virtualenv active:
#   farm-bench -n 4 --timeout 2000 \
#     --vs "env PYTHONPATH=/tmp/base sh benchmarks/bench_reference_spend.sh awareness" \
#     -- sh benchmarks/bench_reference_spend.sh awareness
set -e
suite="${1:-awareness}"
dir=$(mktemp -d)
cd "$dir"
python -m pytest --budget-suite="$suite" -p no:cacheprovider -q --budget-gate=off >/dev/null
cd /
rm -rf "$dir"
