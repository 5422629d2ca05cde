#!/bin/sh
# Starts a Flower deployment-engine process with roundtrim preloaded: the SuperLink (and so the
# ServerApp it starts for each run) as a server, a SuperNode as a client. The round hooks find
# themselves: the ServerApp ends a round at each aggregation, the SuperNode at each train reply
# it pushes (one per FL round); the per-message flwr-clientapp processes get none.
#
#   flower.sh flower-superlink --insecure
#   flower.sh flower-supernode --insecure --superlink 127.0.0.1:9092 \
#       --clientappio-api-address 127.0.0.1:9094 --node-config "partition-id=0 num-partitions=2"
#   flwr run . local-deployment --stream
#
# ROUNDTRIM_LOG_DIR picks where the logs go (default: /var/log/roundtrim).
set -eu

[ $# -gt 0 ] || { echo "usage: flower.sh flower-superlink|flower-supernode [ARGS...]" >&2; exit 2; }
logs=${ROUNDTRIM_LOG_DIR:-/var/log/roundtrim}
mkdir -p "$logs"

case $1 in
    flower-superlink) role=server ;;
    *) role=client ;;
esac
# The ServerApp cleans up every 5th aggregation with the server role; every one with this:
# export ROUNDTRIM_GC_ROUNDS=1
exec roundtrim run --role "$role" --log "$logs/${1##*/}-%p.jsonl" -- "$@"
