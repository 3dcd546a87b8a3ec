#!/bin/bash
# Training throughput on this machine's GPU (issue 47): the RTN at batch 32 and 512 (bf16), each with its
# batches made on the main thread (--workers 0) and ahead in worker processes, the transformer
# (`--network transformer`) at 512, and the Motion VAE, one
# --minutes each, with nvidia-smi's utilisation sampled every second while the steps run. Prints one
# line a run: steps/s, windows/s (a window is one training example: a transition, or a roll-out) and the
# mean GPU utilisation (absent without nvidia-smi, as on a CPU machine).
#
#   tools/gpu_throughput.sh [DATA]    from the repository root; DATA: LaFAN1 as a zip or as the cache file
#                                     --cache writes (the one that travels to the device machine; default
#                                     the cache/lafan1-27-*.npz there)
#   environment: PYTHON (python3), MINUTES (1), WORKERS ("0 4"), RUNS (a scratch folder, /tmp/throughput)
#
# docs/experiments.md, "Batches made ahead of the step", says how to carry the data to the device machine.

set -u
PYTHON=${PYTHON:-python3}
MINUTES=${MINUTES:-1}
WORKERS=${WORKERS:-0 4}
RUNS=${RUNS:-/tmp/throughput}
DATA=${1:-$(ls cache/lafan1-27-*-v1.npz 2>/dev/null | head -1)}
if [ -z "$DATA" ] || [ ! -e "$DATA" ]; then
    echo "no LaFAN1 data: give the zip or its cache file (see docs/experiments.md)" >&2
    exit 2
fi
rm -rf "$RUNS"
mkdir -p "$RUNS"

# one run: NAME BATCH FAMILY OPTIONS...; the GPU sampled from the loop's first step (the line naming the
# parameters) to its checkpoint, so that loading and statistics do not count
one() {
    local name=$1 batch=$2 smi=""
    shift 2
    "$PYTHON" -m training "$@" --data "$DATA" --subjects 1,2,3,4 --out "$RUNS/$name" --batch "$batch" \
        --minutes "$MINUTES" --steps 100000000 --validate-every 100000000 > "$RUNS/$name.log" 2>&1 &
    local run=$!
    while kill -0 $run 2>/dev/null && ! grep -aq "parameters," "$RUNS/$name.log"; do sleep 0.2; done
    if command -v nvidia-smi > /dev/null; then
        nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -l 1 > "$RUNS/$name.smi" &
        smi=$!
    fi
    wait $run
    local status=$?
    [ -n "$smi" ] && kill $smi
    if [ $status -ne 0 ]; then
        echo "$name: failed ($status)"; tail -5 "$RUNS/$name.log"; return
    fi
    # "N steps in T s: S steps/s, W batch items/s": the loop's own count
    local rate
    rate=$(grep -ao "[0-9]* steps in [0-9.]* s: [0-9.]* steps/s, [0-9.]* batch items/s" "$RUNS/$name.log" | tail -1)
    local util="no nvidia-smi"
    [ -n "$smi" ] && util=$(awk '{ s += $1; n++ } END { if (n) printf "GPU %.0f %% (%d samples)", s / n, n }' "$RUNS/$name.smi")
    echo "$name: ${rate/batch items/windows}; $util"
}

# first the share of a step that its batch takes, each timed alone (what --workers can hide at most)
"$PYTHON" tools/batch_share.py --data "$DATA" --batches 32,512 --bf16
for batch in 32 512; do
    for workers in $WORKERS; do
        one "rtn-b$batch-w$workers" $batch rtn --bf16 --workers $workers
    done
done
one tt-b512-w4 512 rtn --network transformer --bf16 --workers 4
one mvae-b256 256 mvae --bf16
