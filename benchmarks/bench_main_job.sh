#!/bin/sh
# The README's main job, or its cost forecast, as a new user runs it: the package
# pip-installed (not editable) in the virtualenv VENV, run from a fresh empty folder,
# -n 0.  Time the whole process from outside, interleaving two virtualenvs (one per
# checkout, each `python3 -m venv V && V/bin/pip install CHECKOUT`), e.g. with
# /usr/bin/time -v, pairs taken in turn and medians quoted.  Usage:
#   sh benchmarks/bench_main_job.sh VENV            # pytest --budget-suite=all -q
#   sh benchmarks/bench_main_job.sh VENV dry-run    # ... --budget-agent=openai/gpt-4o-mini --budget-dry-run
#   sh benchmarks/bench_main_job.sh VENV 600        # ... --budget-query-count=600 (planning)
#   sh benchmarks/bench_main_job.sh VENV main-n2    # the first run with -n 2
#   sh benchmarks/bench_main_job.sh VENV warm       # a rerun: same folder, rollout cache kept
#   sh benchmarks/bench_main_job.sh VENV warm-n2    # the same with -n 2
#   sh benchmarks/bench_main_job.sh VENV triage     # pytest --budget-suite=triage -q (the run
#       the project's own tests start ~60 times; set PYTEST_ADDOPTS="-p no:hypothesispytest
#       -p no:benchmark -p no:platformdirs" as they do)
#   sh benchmarks/bench_main_job.sh VENV planning       # pytest --budget-suite=planning -q (first run)
#   sh benchmarks/bench_main_job.sh VENV planning-warm  # the same, rerun in one folder
# The planning modes are the default planning run the project's own tests start most
# (tests/test_plugin_planning.py, the docs pages, the README main job's first part); the
# tests run them with PYTEST_ADDOPTS="-p no:hypothesispytest -p no:benchmark -p no:platformdirs"
# (set it before farm-bench to time the same thing).
#   sh benchmarks/bench_main_job.sh VENV awareness       # --budget-suite=awareness, a fresh
#       empty folder each run with its .pytest_cache written (cold: the run the project's own
#       tests start most, and most of the main job's cold run); PYTEST_ADDOPTS as for triage
#   sh benchmarks/bench_main_job.sh VENV awareness-warm  # ... rerun in one folder (warm)
# The warm modes run in one folder per venv and mode under /tmp (made, and the cache filled,
# by the first run: farm-bench's warm-up run, which is not counted).
# Bytecode: pip compiles the package at install; pytest rewrites only the bundled suites,
# whose rewritten bytecode it caches unless PYTHONDONTWRITEBYTECODE is set (set on the
# machine these figures were taken on; `env -u PYTHONDONTWRITEBYTECODE` for the other case).
set -e
venv="${1:?usage: bench_main_job.sh VENV [main|main-n2|dry-run|600|warm|warm-n2|triage|planning|planning-warm|awareness|awareness-warm]}"
mode="${2:-main}"
suite=all
case "$mode" in
  main) extra="" ;;
  triage) extra="" suite=triage ;;
  awareness | awareness-warm) extra="" suite=awareness ;;
  dry-run) extra="--budget-agent=openai/gpt-4o-mini --budget-dry-run" ;;
  600) extra="--budget-query-count=600" ;;
  main-n2) extra="-n 2" ;;
  warm) extra="" ;;
  warm-n2) extra="-n 2" ;;
  planning) extra=""; suite=planning ;;
  planning-warm) extra=""; suite=planning ;;
  *) echo "unknown mode $mode (main, main-n2, dry-run, 600, warm, warm-n2, triage, planning, planning-warm, awareness or awareness-warm)" >&2; exit 2 ;;
esac
case "$mode" in
  awareness)
    dir=$(mktemp -d)
    cd "$dir"
    "$venv/bin/pytest" --budget-suite=awareness -q >/dev/null 2>&1 || status=$?
    cd /
    rm -rf "$dir"
    exit "${status:-0}" ;;
  warm* | *-warm)
    dir="/tmp/bench-main-job-$mode-$(echo "$venv" | tr -c 'A-Za-z0-9\n' _)"
    mkdir -p "$dir"
    cd "$dir"
    # shellcheck disable=SC2086
    "$venv/bin/pytest" --budget-suite="$suite" -q $extra >/dev/null 2>&1 || status=$?
    exit "${status:-0}" ;;
esac
dir=$(mktemp -d)
cd "$dir"
# -p no:cacheprovider: every run starts from nothing (no rollout cache, no .pytest_cache).
# shellcheck disable=SC2086
"$venv/bin/pytest" --budget-suite="$suite" -q -p no:cacheprovider $extra >/dev/null 2>&1 || status=$?
cd /
rm -rf "$dir"
exit "${status:-0}"
