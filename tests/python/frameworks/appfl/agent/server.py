"""ServerAgent.global_update: called once per client update; the scheduler aggregates when all
clients of the round have reported (not a round by itself)."""

from appfl.algorithm.aggregator import FedAvgAggregator
from appfl.algorithm.scheduler.sync_scheduler import SyncScheduler


class ServerAgent:
    def __init__(self, server_agent_config=None, num_clients=2):
        self.aggregator = FedAvgAggregator()
        self.scheduler = SyncScheduler(self.aggregator, num_clients)

    def global_update(self, client_id, local_model, blocking=False, **kwargs):
        return self.scheduler.schedule(client_id, local_model)

    def get_num_clients(self):
        return self.scheduler.num_clients
