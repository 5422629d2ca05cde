"""Messages and the node's context."""

from .message import Message as Message


class Context:
    def __init__(self, node_id=0):
        self.node_id = node_id
        self.state = {}
