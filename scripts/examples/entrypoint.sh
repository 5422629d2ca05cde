#!/bin/sh
# Container entrypoint: preloads libroundtrim.so into the container's command, then becomes that
# command (exec), so that it keeps the container's signals: `docker stop` reaches it, and
# `docker kill --signal USR1 CONTAINER` ends a round.
#
#   ROUNDTRIM_LIB                     the library (default /opt/roundtrim/lib/libroundtrim.so)
#   NVFLARE_ENABLE_JEMALLOC_PRELOAD   true: also preload the system's jemalloc, after roundtrim
#   ROUNDTRIM_*                       passed on to the library (see: roundtrim env)
set -eu

lib=${ROUNDTRIM_LIB:-/opt/roundtrim/lib/libroundtrim.so}

if [ $# -eq 0 ]; then
    echo "entrypoint: no command to run; give one after the image name or in CMD" >&2
    exit 2
fi

preload=
if [ -f "$lib" ]; then
    preload=$lib
else
    echo "entrypoint: $lib not found; running without roundtrim" >&2
fi

case ${NVFLARE_ENABLE_JEMALLOC_PRELOAD:-} in
    true | TRUE | True | 1)
        jemalloc=
        for candidate in /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 \
            /usr/lib/aarch64-linux-gnu/libjemalloc.so.2 /usr/lib64/libjemalloc.so.2 \
            /usr/local/lib/libjemalloc.so; do
            if [ -f "$candidate" ]; then
                jemalloc=$candidate
                break
            fi
        done
        if [ -n "$jemalloc" ]; then
            preload=${preload:+$preload:}$jemalloc
            export MALLOC_CONF="${MALLOC_CONF:-dirty_decay_ms:5000,muzzy_decay_ms:5000}"
        else
            echo "entrypoint: jemalloc not found; install libjemalloc2 in the image" >&2
        fi
        ;;
esac

if [ -n "$preload" ]; then
    LD_PRELOAD="$preload${LD_PRELOAD:+:$LD_PRELOAD}"
    export LD_PRELOAD
fi
exec "$@"
