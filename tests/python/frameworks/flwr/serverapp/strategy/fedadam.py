from flwr.serverapp.strategy.fedopt import FedOpt


class FedAdam(FedOpt):
    def aggregate_train(self, server_round, replies):
        arrays, metrics = super().aggregate_train(server_round, replies)
        return (None if arrays is None else [a * 1.0 for a in arrays]), metrics
