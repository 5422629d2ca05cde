from .base_aggregator import BaseAggregator as BaseAggregator
from .fedavg_aggregator import FedAvgAggregator as FedAvgAggregator
from .fedavgm_aggregator import FedAvgMAggregator as FedAvgMAggregator
