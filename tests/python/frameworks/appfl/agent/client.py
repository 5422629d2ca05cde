"""ClientAgent.train: one local training per FL round."""

import gc

from appfl.config import optimize_memory


class _Leftover:
    def __init__(self):
        self.me = self
        self.payload = bytearray(64 * 1024)


class ClientAgent:
    def __init__(self, client_agent_config=None):
        self.parameters = [0.0, 0.0]
        self.keep = []

    def load_parameters(self, parameters):
        self.parameters = list(parameters)

    def train(self, **kwargs):
        for _ in range(32):
            _Leftover()  # cycles: garbage only a full collection frees
        self.parameters = [p + 1.0 for p in self.parameters]
        if optimize_memory():
            gc.collect()

    def get_parameters(self):
        return list(self.parameters)
