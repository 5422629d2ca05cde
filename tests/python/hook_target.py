"""Functions and methods that round-hook tests point ROUNDTRIM_PY_HOOK at."""


def round_fn(data, scale=1.0, *rest, tag: str = "r", **extra) -> float:
    """Sums the data."""
    return sum(data) * scale


class Trainer:
    def fit(self, parameters, config):
        return [p + 1 for p in parameters], len(parameters), dict(config)

    @staticmethod
    def helper(x):
        return x * 3

    @classmethod
    def build(cls, n):
        return cls.__name__, n


class Inherits(Trainer):
    pass


class Overrides(Trainer):
    def fit(self, parameters, config):
        return super().fit(parameters, config)


class RoundError(Exception):
    pass


def failing(x):
    raise RoundError(x)
