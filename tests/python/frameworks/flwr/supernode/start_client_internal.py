"""The SuperNode's loop: pull an instruction, have a flwr-clientapp process answer it, push the
reply. Instructions arrive as JSON lines on stdin, replies leave on stdout."""

import json
import os
import subprocess
import sys

from flwr.common import Message


class _NodeState:
    def __init__(self):
        self.replies = []


def start_client_internal(*, app):
    state = _NodeState()
    while True:
        message = _pull_and_store_message(state)
        if message is None:
            break
        _launch_clientapp(state, message, app)
        _push_messages(state=state, send=_send)


def _pull_and_store_message(state):
    line = sys.stdin.readline()
    data = json.loads(line) if line else None
    return Message.from_dict(data) if data else None


def _launch_clientapp(state, message, app):
    # One process per message, as the SuperExec launches them.
    out = subprocess.run(
        [sys.executable, "-c", "from flwr.supernode.cli import flwr_clientapp as f; f()",
         "--app", app],
        input=json.dumps(message.to_dict()),
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=60,
        check=True,
    )
    state.replies.append(Message.from_dict(json.loads(out.stdout)))


def _send(message):
    sys.stdout.write(json.dumps(message.to_dict()) + "\n")
    sys.stdout.flush()


def _push_messages(state, send):
    for message in state.replies:
        send(message)
    state.replies.clear()
