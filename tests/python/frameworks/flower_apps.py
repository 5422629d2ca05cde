"""A user's Flower apps: a Message API ClientApp (@app.train / @app.evaluate, and a custom train
action) and a legacy NumPyClient, both adding 1 to each parameter; a strategy of the user's that
trains with the custom action."""

from flwr.client import NumPyClient
from flwr.clientapp import ClientApp
from flwr.common import Message
from flwr.serverapp.strategy import FedAvg

app = ClientApp()


@app.train()
def train(msg, context):
    return Message({"parameters": [p + 1.0 for p in msg.content["parameters"]]}, reply_to=msg)


@app.train("custom")
def train_custom(msg, context):
    return train(msg, context)


@app.evaluate()
def evaluate(msg, context):
    return Message({"loss": 0.5}, reply_to=msg)


class FlowerClient(NumPyClient):
    def fit(self, parameters, config):
        return [p + 1.0 for p in parameters], {}

    def evaluate(self, parameters, config):
        return 0.5


legacy_app = ClientApp(client_fn=lambda context: FlowerClient().to_client())


class CustomActionFedAvg(FedAvg):
    def configure_train(self, server_round, arrays, grid):
        return [Message(m.content, "train.custom", m.metadata.group_id)
                for m in super().configure_train(server_round, arrays, grid)]
