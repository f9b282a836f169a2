#!/bin/sh
# The awareness suite's default run with its JSON report (issue 33: the samples a report
# needs are built at the cost of the scoring they repeat), from a fresh empty folder:
#   farm-bench -n 5 --timeout 900 --vs 'sh benchmarks/bench_awareness_report.sh MAIN_VENV' \
#     -- sh benchmarks/bench_awareness_report.sh BRANCH_VENV
# 2026-11-28, 2c (loaded), 4 interleaved pairs, s12-ci (samples reuse the scoring tables,
# scrubber memo) against main 0b43c66: cpu median 13.6 s against 13.9 s, A/B cpu 0.99
# (0.81-1.09): within the noise.
set -e
venv="${1:?usage: bench_awareness_report.sh VENV}"
dir=$(mktemp -d)
cd "$dir"
# -p no:cacheprovider: every run starts from nothing (no rollout cache, no .pytest_cache).
"$venv/bin/pytest" --budget-suite=awareness -q -p no:cacheprovider --budget-report=r.json \
  >/dev/null 2>&1 || status=$?
cd /
rm -rf "$dir"
exit "${status:-0}"
