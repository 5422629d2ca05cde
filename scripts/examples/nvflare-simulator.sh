#!/bin/sh
# Runs an NVFlare job in the simulator with roundtrim preloaded, then prints each process's
# rounds. The round hooks find themselves (flare.send() in the training script, the external
# trainer's executor in the client job): nothing else to set.
#
#   nvflare-simulator.sh JOB_FOLDER [CLIENTS]
#
# One client per simulator worker (-t = -n), so that each process gets one round per FL round.
# ROUNDTRIM_LOG_DIR picks where the logs go (default: ./roundtrim-logs).
set -eu

job=${1:?usage: nvflare-simulator.sh JOB_FOLDER [CLIENTS]}
clients=${2:-2}
logs=${ROUNDTRIM_LOG_DIR:-./roundtrim-logs}
mkdir -p "$logs"

# NVFlare main no longer reads these two; roundtrim does (client processes only).
export NVFLARE_CLIENT_MEMORY_GC_ROUNDS="${NVFLARE_CLIENT_MEMORY_GC_ROUNDS:-1}"
# On GPU clients, also release the PyTorch CUDA cache at cleanup:
# export NVFLARE_CUDA_EMPTY_CACHE=true

status=0
roundtrim run --log "$logs/nvflare-%p.jsonl" -- \
    nvflare simulator "$job" -w "${TMPDIR:-/tmp}/nvflare-sim" -n "$clients" -t "$clients" ||
    status=$?
for log in "$logs"/nvflare-*.jsonl; do
    [ -f "$log" ] && roundtrim report "$log"
done
exit "$status"
