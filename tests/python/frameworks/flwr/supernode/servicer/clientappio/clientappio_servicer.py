"""The ClientAppIo API a flwr-clientapp process talks to: it pulls the instruction it answers and
pushes its reply, which the servicer stores in the NodeState (on the API's thread)."""

import json

from flwr.common import Message


class ClientAppIoServicer:
    def __init__(self, state_factory):
        self.state_factory = state_factory

    def PullMessage(self):
        messages = self.state_factory.state().get_messages(is_reply=False, limit=1)
        return messages[0] if messages else None

    def PushMessage(self, reply_json):
        self.state_factory.state().store_message(Message.from_dict(json.loads(reply_json)))
