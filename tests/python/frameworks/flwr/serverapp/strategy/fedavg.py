from flwr.common import Message
from flwr.serverapp.strategy.strategy import Strategy


class FedAvg(Strategy):
    def __init__(self, fraction_train=1.0):
        self.fraction_train = fraction_train

    def configure_train(self, server_round, arrays, grid):
        if self.fraction_train == 0.0:  # a federated evaluation: no training at all
            return []
        return [Message({"parameters": arrays}, "train", str(server_round)) for _ in grid.nodes]

    def configure_evaluate(self, server_round, arrays, grid):
        return [Message({"parameters": arrays}, "evaluate", str(server_round)) for _ in grid.nodes]

    def aggregate_train(self, server_round, replies):
        if not replies:
            return None, None
        params = [r.content["parameters"] for r in replies]
        return [sum(col) / len(col) for col in zip(*params)], {}

    def aggregate_evaluate(self, server_round, replies):
        return {"loss": sum(r.content["loss"] for r in replies) / len(replies)}
