"""flwr-clientapp: one process per message; it runs the ClientApp once and exits."""

import sys

from flwr.supernode.runtime.run_clientapp import run_clientapp


def flwr_clientapp():
    sys.stdout.write(run_clientapp(sys.argv[sys.argv.index("--app") + 1], sys.stdin.read()))

