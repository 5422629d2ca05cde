from appfl.algorithm.aggregator.fedavg_aggregator import FedAvgAggregator


class FedAvgMAggregator(FedAvgAggregator):
    pass
