from .strategy import FedAvg as FedAvg
