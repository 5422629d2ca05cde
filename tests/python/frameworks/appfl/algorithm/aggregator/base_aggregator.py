class BaseAggregator:
    def aggregate(self, local_models, **kwargs):
        raise NotImplementedError
