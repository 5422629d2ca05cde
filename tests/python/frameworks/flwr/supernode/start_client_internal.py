"""The SuperNode's main loop. It pulls an instruction and stores it in the NodeState; the
ClientAppIo API, served on a thread of its own, hands it to a flwr-clientapp process (one per
message, launched there as the SuperExec launches them) and stores that process's reply; the
loop meanwhile waits for the reply and pushes it. Instructions arrive as JSON lines on stdin,
replies leave on stdout; a "null" line ends the node."""

import json
import os
import subprocess
import sys
import threading
import time

from flwr.common import Message
from flwr.supernode.nodestate import NodeStateFactory
from flwr.supernode.servicer.clientappio import ClientAppIoServicer


def start_client_internal(*, app):
    state_factory = NodeStateFactory()
    clientappio_server = run_clientappio_api_grpc(state_factory, app)
    state = state_factory.state()
    try:
        while True:
            run_id = _pull_and_store_message(state=state, receive=_receive)
            if run_id is None:
                break
            _push_messages(state=state, send=_send)
    finally:
        clientappio_server.stop()


def _receive():
    line = sys.stdin.readline()
    data = json.loads(line) if line else None
    return Message.from_dict(data) if data else None


def _pull_and_store_message(state, receive):
    message = receive()
    if message is None:
        return None
    state.store_message(message)
    return 1  # the run's ID


def _send(message):
    sys.stdout.write(json.dumps(message.to_dict()) + "\n")
    sys.stdout.flush()


def _push_messages(state, send):
    # One message at a time: wait until the ClientApp's reply is there.
    while not (reply_messages := state.get_messages(is_reply=True)):
        time.sleep(0.01)
    for message in reply_messages:
        try:
            send(message)
        finally:
            state.delete_messages(message_ids=[message.metadata.message_id,
                                               message.metadata.reply_to_message_id])


class _ClientAppIoServer:
    """The API's server thread: it launches a flwr-clientapp process for each instruction and
    serves that process's pull and push."""

    def __init__(self, servicer, app):
        self._servicer = servicer
        self._app = app
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="clientappio")
        self._thread.start()

    def _serve(self):
        while not self._stop.is_set():
            message = self._servicer.PullMessage()
            if message is None:
                self._stop.wait(0.01)
                continue
            try:
                reply = _run_clientapp_process(self._app, message)
            except (OSError, subprocess.SubprocessError) as e:
                # The ClientApp died: an error reply, as the SuperNode sends one then.
                reply = json.dumps(Message({"error": str(e)}, reply_to=message).to_dict())
            self._servicer.PushMessage(reply)

    def stop(self):
        self._stop.set()
        self._thread.join()


def run_clientappio_api_grpc(state_factory, app):
    return _ClientAppIoServer(ClientAppIoServicer(state_factory), app)


def _run_clientapp_process(app, message):
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
    return out.stdout
