from .fedadam import FedAdam as FedAdam
from .fedavg import FedAvg as FedAvg
from .strategy import Strategy as Strategy
