import threading

from .in_memory_nodestate import InMemoryNodeState


class NodeStateFactory:
    """One NodeState per SuperNode, created on first use."""

    def __init__(self):
        self.state_instance = None
        self.lock = threading.RLock()

    def state(self):
        with self.lock:
            if self.state_instance is None:
                self.state_instance = InMemoryNodeState()
            return self.state_instance
