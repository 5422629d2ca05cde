"""Legacy start_client: one long-lived client process handling every instruction itself."""

import json
import sys

from flwr.client.client import maybe_call_evaluate, maybe_call_fit


def start_client(*, server_address, client, on_reply=None):
    client = client.to_client() if hasattr(client, "to_client") else client
    for line in sys.stdin:
        ins = json.loads(line)
        if ins is None:
            break
        call = maybe_call_fit if ins["type"] == "train" else maybe_call_evaluate
        reply = call(client, ins["content"])
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
        if on_reply:
            on_reply(ins)
