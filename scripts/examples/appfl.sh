#!/bin/sh
# Starts an APPFL server, client or MPI run with roundtrim preloaded. The round hooks find
# themselves: a client ends a round at each local training, the server at each aggregation, a
# serial or MPI run in one process at each aggregation.
#
#   appfl.sh server python run_server.py --config server_fedavg.yaml
#   appfl.sh client python run_client.py --config client_1.yaml
#   appfl.sh client mpiexec -n 3 python run_mpi.py
#
# ROUNDTRIM_LOG_DIR picks where the logs go (default: ./roundtrim-logs).
set -eu

[ $# -gt 1 ] || { echo "usage: appfl.sh server|client COMMAND [ARGS...]" >&2; exit 2; }
role=$1
shift
case $role in
    server | client) ;;
    *) echo "appfl.sh: the role is server or client, not '$role'" >&2; exit 2 ;;
esac
logs=${ROUNDTRIM_LOG_DIR:-./roundtrim-logs}
mkdir -p "$logs"
# The asynchronous and ADMM aggregators override aggregate: name yours on top of the table, e.g.
# export ROUNDTRIM_PY_HOOK=auto,appfl.algorithm.aggregator.fedasync_aggregator:FedAsyncAggregator.aggregate
exec roundtrim run --role "$role" --log "$logs/appfl-$role-%p.jsonl" -- "$@"
