"""Legacy NumPyClient: to_client() wraps it in a Client whose fit is the module's _fit."""

from flwr.client.client import Client


class NumPyClient:
    def fit(self, parameters, config):
        raise NotImplementedError

    def evaluate(self, parameters, config):
        raise NotImplementedError

    def to_client(self):
        return _wrap_numpy_client(self)


def _fit(self, ins):
    parameters, metrics = self.numpy_client.fit(ins["parameters"], ins.get("config", {}))
    return {"parameters": parameters, "metrics": metrics}


def _evaluate(self, ins):
    loss = self.numpy_client.evaluate(ins["parameters"], ins.get("config", {}))
    return {"loss": loss}


def _wrap_numpy_client(client):
    def init(self, numpy_client):
        self.numpy_client = numpy_client

    wrapper = type("NumPyClientWrapper", (Client,), {"__init__": init, "fit": _fit,
                                                     "evaluate": _evaluate})
    return wrapper(client)
