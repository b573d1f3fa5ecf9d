#!/usr/bin/env bash
# The checks and figures that need the GPU machine (issues 29 and 30), in one call, a few minutes
# on an H100/H200 machine (16 cores), from the repository
# root, with no install: the code runs from src/ (PYTHONPATH) under the machine's own python3 and
# torch. OpenSpiel (for the C++ baseline and the games) is installed from wheels in .whl/ when
# that folder exists (open_spiel, ml_collections, xgboost-cpu for Python 3.12: see
# docs/benchmarks/engine_gpu.md). Results go to $OUT (default gpu_out/): log.txt,
# engine_gpu.json, the batch benchmark's JSON, tournament.json, games.parquet, summary.parquet.
#
#   OUT=gpu_out bash benchmarks/device_checks.sh [tests] [engine] [batch] [tournament] [kernels]
#
# engine_cpu (<= 4 minutes): bench_engine.py on the idle host's CPU, one thread per solver: the
# pruned and fused compiled passes against OpenSpiel's C++ CFRSolver -> $OUT/engine_cpu.json.
#
# kernels (<= 3 minutes): the CUDA-graph tests, then bench_engine_gpu.py (the graph over the
# static passes against the level-by-level graph, eager GPU, one CPU thread and OpenSpiel's
# C++, operators and CUDA kernels per iteration) -> $OUT/engine_kernels.json.
#
# tournament: a duplicate `pasur tournament` on local worker processes (--processes, no Ray on
# that machine), stopped by SIGINT after TOURNAMENT_SECONDS (finished deals kept); settings from
# TOURNAMENT_AGENTS, TOURNAMENT_DEALS, TOURNAMENT_SEED, TOURNAMENT_BUDGET (seconds per move),
# TOURNAMENT_DRAWS (determinizations cap: large, so the time budget governs), TOURNAMENT_PROCESSES;
# TOURNAMENT_OUT (default /tmp/tournament): a tournament folder carried in (`run`'s carry, e.g.
# runs/rs_pimc_025) resumes there (set the TOURNAMENT_* settings to the folder's own, as
# its tournament.json holds them: a mismatch is refused), and the whole folder comes back in
# $OUT/tournament/ (games.jsonl included: copy it back over the local folder to resume again).
set -uo pipefail
OUT=${OUT:-gpu_out}
mkdir -p "$OUT"
parts=${*:-tests engine batch}
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=src:${PYTHONPATH:-} PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  python3 -c "import os, torch, numba; print('torch', torch.__version__, 'numba', numba.__version__, 'cpus', os.cpu_count())"
  uptime
} 2>&1 | tee -a "$OUT/log.txt"
for part in $parts; do
  case $part in
    tests)
      timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_cuda_graph.py \
        tests/test_core_regret.py tests/test_best_response.py \
        tests/test_numeral211_class_storage.py tests/test_numeral211_embedding.py -k cuda \
        2>&1 | tail -n 30 | tee -a "$OUT/log.txt" ;;
    engine)
      timeout 240 python3 benchmarks/bench_engine_gpu.py --games leduc_poker,liars_dice,tic_tac_toe \
        --out "$OUT/engine_gpu.json" 2>&1 | tee -a "$OUT/log.txt" ;;
    kernels)
      timeout 45 python3 -m pytest -q -p no:cacheprovider tests/test_cuda_graph.py \
        2>&1 | tail -n 15 | tee -a "$OUT/log.txt"
      timeout 130 python3 benchmarks/bench_engine_gpu.py --games tic_tac_toe,leduc_poker,liars_dice \
        --reps 4 --min-rep-seconds 0.2 --check-iterations 12 --out "$OUT/engine_kernels.json" \
        2>&1 | tee -a "$OUT/log.txt" ;;
    engine_cpu)
      timeout 240 python3 benchmarks/bench_engine.py --games liars_dice,tic_tac_toe \
        --solvers new,new_fused,cpp --reps 5 --min-rep-seconds 0.3 --warmup 30 \
        --out "$OUT/engine_cpu.json" 2>&1 | tee -a "$OUT/log.txt" ;;
    batch)
      if [ -f benchmarks/bench_pasur_batched.py ]; then
        timeout 240 python3 benchmarks/bench_pasur_batched.py --device cuda --out "$OUT/pasur_batched.json" \
          2>&1 | tee -a "$OUT/log.txt"
      fi ;;
    tournament)
      timeout -s INT "${TOURNAMENT_SECONDS:-300}" python3 -m tensorcfr.cli.main pasur tournament \
        --agents "${TOURNAMENT_AGENTS:-round-search,hidden-model,ismcts-time}" \
        --deals "${TOURNAMENT_DEALS:-400}" --seed "${TOURNAMENT_SEED:-0}" \
        --seconds-per-move "${TOURNAMENT_BUDGET:-0.25}" \
        --determinizations "${TOURNAMENT_DRAWS:-10000}" \
        --processes "${TOURNAMENT_PROCESSES:-15}" --out "${TOURNAMENT_OUT:-/tmp/tournament}" --json \
        > "$OUT/tournament.json" 2> /tmp/tournament.err
      echo "tournament exit $?" | tee -a "$OUT/log.txt"; tail -n 5 /tmp/tournament.err | tee -a "$OUT/log.txt"
      mkdir -p "$OUT/tournament"
      cp "${TOURNAMENT_OUT:-/tmp/tournament}"/* "$OUT/tournament/" ;;
  esac
done
