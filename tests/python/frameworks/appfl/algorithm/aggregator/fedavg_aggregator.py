"""FedAvgAggregator.aggregate: one aggregation per FL round (synchronous scheduler)."""

import gc

from appfl.algorithm.aggregator.base_aggregator import BaseAggregator
from appfl.config import optimize_memory


class _Leftover:
    def __init__(self):
        self.me = self


class FedAvgAggregator(BaseAggregator):
    def aggregate(self, local_models, **kwargs):
        for _ in range(16):
            _Leftover()
        models = list(local_models.values())
        result = [sum(col) / len(col) for col in zip(*models)]
        if optimize_memory():
            gc.collect()
        return result
