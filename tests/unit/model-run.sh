#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The long run of the reference model (make model): SEQUENCES sequences split over JOBS
# processes of test_model, each from its own seed (SEED+j, SEED drawn at random when not
# given; each process prints its own), with the stages in STAGES_ORDER (stages.order; empty: the default). Exits 1
# when any process found a divergence; each prints its own, shrunk, with the command that
# replays it.
set -euo pipefail
bin=$1 sequences=${2:-10000} jobs=${3:-1} seed=${4:-} checks=${5:-} order=${6:-}

if ! [[ $jobs =~ ^[1-9][0-9]*$ && $sequences =~ ^[1-9][0-9]*$ ]]; then
	echo "model-run.sh: SEQUENCES and JOBS must be positive numbers" >&2
	exit 2
fi
# Not test_model's default (the time in seconds): processes started in the same second would
# run the same sequences.
[[ -n $seed ]] || seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT INT TERM
for ((j = 0; j < jobs; j++)); do
	n=$((sequences / jobs + (j < sequences % jobs ? 1 : 0)))
	((n > 0)) || continue
	args=(--sequences "$n")
	args+=(--seed "$((seed + j))")
	[[ -n $checks ]] && args+=(--checks "$checks")
	[[ -n $order ]] && args+=(--order "$order")
	"$bin" "${args[@]}" &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do
	wait "$p" || rc=1
done
pids=()
exit $rc
