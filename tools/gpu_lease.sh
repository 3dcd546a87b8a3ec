#!/bin/bash
# One lease of a GPU machine (15 minutes, issue 47), used from its first minute to its last: the throughput
# table (tools/gpu_throughput.sh, half a minute a run), then the stretch of training that a CPU session left,
# continued on the GPU for the minutes that are left, its weights brought back as a float32 model file
# (under the 16 MiB a returned file may have) and its log.
#
#   tools/gpu_lease.sh INIT.onnx TRAIN_MINUTES DATA...     from the repository root, on the device machine
#   environment: PYTHON (python3), OUT (where results go: the run's $OUT), RTN_OPTIONS (the stretch's
#   training options, as its card's command gives them, less --data, --init, --out, --minutes and --batch)
#
# INIT.onnx: "none" trains a new network (say which in RTN_OPTIONS: `--network transformer --width 128
# --layers 4`, issue 47's candidate, whose step has no loop over frames); otherwise the CPU stretch exported in
# float32 (`python -m training export CHECKPOINT -o INIT.onnx`; a checkpoint with its optimiser's state is too
# large to carry); DATA: the cache files its data sets became
# (cache/NAME-*-v1.npz: what `--cache` wrote, every skeleton's part of an archive). The card of the model
# made from what comes back names this stretch and the GPU it ran on.

set -u
PYTHON=${PYTHON:-python3}
OUT=${OUT:-/tmp/lease}
INIT=$1
MINUTES=$2
shift 2
mkdir -p "$OUT"
start=$(date +%s)
MINUTES=0.5 PYTHON="$PYTHON" RUNS="$OUT/throughput" tools/gpu_throughput.sh 2>&1 | tee "$OUT/throughput.txt"
echo "throughput: $(( $(date +%s) - start )) s" | tee -a "$OUT/throughput.txt"
data=()
for file in "$@"; do data+=(--data "$file"); done
# shellcheck disable=SC2086  # RTN_OPTIONS is a list of options
init=(--init "$INIT")
[ "$INIT" = none ] && init=()
"$PYTHON" -m training rtn "${data[@]}" "${init[@]}" --out "$OUT/run" --batch 512 --bf16 --workers 4 \
    --minutes "$MINUTES" --checkpoint-minutes 2 ${RTN_OPTIONS:-} > "$OUT/train.log" 2>&1
tail -3 "$OUT/train.log"
"$PYTHON" -m training export "$OUT/run/checkpoint.pt" -o "$OUT/continued.onnx" 2>&1 | tail -1
rm -rf "$OUT/run/checkpoint.pt"   # 60 MiB or more with the optimiser's state: it cannot come back
