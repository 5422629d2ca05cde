from flwr.serverapp.strategy.fedavg import FedAvg


class FedOpt(FedAvg):
    pass
