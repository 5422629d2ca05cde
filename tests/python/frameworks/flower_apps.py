"""A user's Flower apps: a Message API ClientApp (@app.train / @app.evaluate) and a legacy
NumPyClient, both adding 1 to each parameter."""

from flwr.client import NumPyClient
from flwr.clientapp import ClientApp
from flwr.common import Message

app = ClientApp()


@app.train()
def train(msg, context):
    return Message({"parameters": [p + 1.0 for p in msg.content["parameters"]]}, reply_to=msg)


@app.evaluate()
def evaluate(msg, context):
    return Message({"loss": 0.5}, reply_to=msg)


class FlowerClient(NumPyClient):
    def fit(self, parameters, config):
        return [p + 1.0 for p in parameters], {}

    def evaluate(self, parameters, config):
        return 0.5


legacy_app = ClientApp(client_fn=lambda context: FlowerClient().to_client())
