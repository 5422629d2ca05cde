"""flower-supernode: the long-lived node process."""

import sys


def flower_supernode():
    from flwr.supernode.start_client_internal import start_client_internal

    start_client_internal(app=sys.argv[sys.argv.index("--app") + 1])

