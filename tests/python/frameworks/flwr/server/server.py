"""The legacy server loop (Strategy API): fit_round once per FL round."""


class Server:
    def __init__(self, client_manager, strategy=None):
        self.clients = client_manager
        self.parameters = [0.0, 0.0]

    def fit(self, num_rounds, timeout=None, after_round=None):
        for current_round in range(1, num_rounds + 1):
            self.fit_round(current_round, timeout)
            if after_round:
                after_round(current_round)
        return self.parameters

    def fit_round(self, server_round, timeout):
        results = [fit(self.parameters) for fit in self.clients]
        self.parameters = [sum(col) / len(col) for col in zip(*results)]
        return self.parameters
