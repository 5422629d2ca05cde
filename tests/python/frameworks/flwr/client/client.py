"""Legacy Client and the calls the message handler makes on it."""


class Client:
    def fit(self, ins):
        raise NotImplementedError

    def evaluate(self, ins):
        raise NotImplementedError


def maybe_call_fit(client, fit_ins):
    return client.fit(fit_ins)


def maybe_call_evaluate(client, evaluate_ins):
    return client.evaluate(evaluate_ins)
