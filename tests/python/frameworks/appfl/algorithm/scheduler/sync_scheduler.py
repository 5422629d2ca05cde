class SyncScheduler:
    def __init__(self, aggregator, num_clients):
        self.aggregator = aggregator
        self.num_clients = num_clients
        self.local_models = {}

    def schedule(self, client_id, local_model):
        self.local_models[client_id] = local_model
        if len(self.local_models) < self.num_clients:
            return None
        models, self.local_models = self.local_models, {}
        return self.aggregator.aggregate(models)
