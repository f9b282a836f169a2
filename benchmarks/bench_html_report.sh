#!/bin/sh
# The cost of the HTML report (issue 33): the README's main job with or without
# --budget-html, or `budget-report render` of a saved report, each run from a fresh empty
# folder.  Time whole processes from outside, interleaving the two forms of the main job
# (A with the page, B without), e.g. with /usr/bin/time -v, pairs taken in turn and the
# median ratio quoted.  Usage:
#   sh benchmarks/bench_html_report.sh VENV html       # pytest --budget-suite=all -q --budget-html=p.html
#   sh benchmarks/bench_html_report.sh VENV plain      # the same without --budget-html
#   sh benchmarks/bench_html_report.sh VENV render R   # budget-report render R -o p.html
# R is a saved JSON report, e.g. from `pytest --budget-suite=all --budget-report=R`.
set -e
venv="${1:?usage: bench_html_report.sh VENV html|plain|render [REPORT]}"
mode="${2:-html}"
dir=$(mktemp -d)
case "$mode" in
  html) extra="--budget-html=$dir/p.html" ;;
  plain) extra="" ;;
  render) report="${3:?render needs a saved report}" ;;
  *) echo "unknown mode $mode (html, plain or render)" >&2; exit 2 ;;
esac
cd "$dir"
if [ "$mode" = render ]; then
  "$venv/bin/budget-report" render "$report" -o p.html >/dev/null 2>&1 || status=$?
else
  # -p no:cacheprovider: every run starts from nothing (no rollout cache, no .pytest_cache).
  # shellcheck disable=SC2086
  "$venv/bin/pytest" --budget-suite=all -q -p no:cacheprovider $extra >/dev/null 2>&1 || status=$?
fi
cd /
rm -rf "$dir"
exit "${status:-0}"
