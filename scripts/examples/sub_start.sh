# roundtrim for a federated-learning client: paste into the site's sub_start.sh (or source this
# file from it), after any line that sets LD_PRELOAD (such as a jemalloc preload) and before the
# line that starts the client. Every process the client starts inherits the preload; each one
# writes its own round log.
#
# NVFlare's generated sub_start.sh exports MALLOC_ARENA_MAX=4 for every role; an explicit
# MALLOC_ARENA_MAX wins over roundtrim's client cap of 2, so drop that line on clients.
# NVFLARE_CLIENT_MEMORY_GC_ROUNDS and NVFLARE_CUDA_EMPTY_CACHE, if set, are honoured.

# Where libroundtrim.so is installed on this site.
ROUNDTRIM_LIB=${ROUNDTRIM_LIB:-/usr/local/lib/libroundtrim.so}

if [ -f "$ROUNDTRIM_LIB" ]; then
    # Our library first, so that it sees every allocation; what was preloaded stays after it.
    LD_PRELOAD="$ROUNDTRIM_LIB${LD_PRELOAD:+:$LD_PRELOAD}"
    export LD_PRELOAD
    # A client cleans up every round and caps glibc's arenas at 2.
    export ROUNDTRIM_ROLE=client
    # One JSON line per round; %p becomes the process id. See: roundtrim report FILE --png OUT.png
    export ROUNDTRIM_LOG="${ROUNDTRIM_LOG:-${TMPDIR:-/tmp}/roundtrim-client-%p.jsonl}"
    # On GPU clients, also release the PyTorch CUDA cache and the CUDA pools at cleanup:
    # export ROUNDTRIM_CUDA_EMPTY_CACHE=true
else
    echo "roundtrim: $ROUNDTRIM_LIB not found; the client starts without it" >&2
fi
