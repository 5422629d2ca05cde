# roundtrim for a federated-learning client: paste into the site's sub_start.sh (or source this
# file from it), after any line that sets LD_PRELOAD (such as a jemalloc preload) and before the
# line that starts the client. Every process the client starts inherits the preload; each one
# writes its own round log.
#
# NVFlare's generated sub_start.sh exports MALLOC_ARENA_MAX=4 for every role; roundtrim leaves
# glibc's own arena count on clients (ROUNDTRIM_ARENA_MAX=0; 4 on servers), and an explicit
# MALLOC_ARENA_MAX always wins over roundtrim's, so keep or drop that line as you measure.
# NVFLARE_CLIENT_MEMORY_GC_ROUNDS and NVFLARE_CUDA_EMPTY_CACHE, if set, are honoured.

# Where libroundtrim.so is: ROUNDTRIM_LIB, else where `make install` (PREFIX/lib, /usr/local by
# default) or the Debian package (/usr/lib/<multiarch triplet>) put it.
if [ -z "${ROUNDTRIM_LIB:-}" ]; then
    for candidate in /usr/local/lib/libroundtrim.so /usr/lib/x86_64-linux-gnu/libroundtrim.so \
        /usr/lib/aarch64-linux-gnu/libroundtrim.so /usr/lib64/libroundtrim.so \
        /usr/lib/libroundtrim.so /opt/roundtrim/lib/libroundtrim.so; do
        if [ -f "$candidate" ]; then
            ROUNDTRIM_LIB=$candidate
            break
        fi
    done
fi

if [ -n "${ROUNDTRIM_LIB:-}" ] && [ -f "$ROUNDTRIM_LIB" ]; then
    # Our library first, so that it sees every allocation; what was preloaded stays after it.
    LD_PRELOAD="$ROUNDTRIM_LIB${LD_PRELOAD:+:$LD_PRELOAD}"
    export LD_PRELOAD
    # A client: cleanup looked at every round (ROUNDTRIM_GC_ROUNDS=1).
    export ROUNDTRIM_ROLE=client
    # One JSON line per round; %p becomes the process id. See: roundtrim report FILE --png OUT.png
    export ROUNDTRIM_LOG="${ROUNDTRIM_LOG:-${TMPDIR:-/tmp}/roundtrim-client-%p.jsonl}"
    echo "roundtrim: preloading $ROUNDTRIM_LIB; round logs in $ROUNDTRIM_LOG" >&2
    # On GPU clients, also release the PyTorch CUDA cache and the CUDA pools at cleanup:
    # export ROUNDTRIM_CUDA_EMPTY_CACHE=true
elif [ -n "${ROUNDTRIM_LIB:-}" ]; then
    echo "roundtrim: ROUNDTRIM_LIB=$ROUNDTRIM_LIB not found; the client starts without roundtrim" >&2
else
    echo "roundtrim: libroundtrim.so not found in /usr/local/lib, /usr/lib/<triplet>, /usr/lib64," \
        "/usr/lib or /opt/roundtrim/lib (set ROUNDTRIM_LIB); the client starts without roundtrim" >&2
fi
