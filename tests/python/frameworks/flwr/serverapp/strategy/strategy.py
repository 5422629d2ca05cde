"""Strategy.start: the ServerApp's round loop (train, aggregate, evaluate, aggregate)."""


class Strategy:
    def aggregate_train(self, server_round, replies):
        raise NotImplementedError

    def aggregate_evaluate(self, server_round, replies):
        raise NotImplementedError

    def start(self, grid, initial_arrays, num_rounds=3, after_round=None):
        arrays = initial_arrays
        for current_round in range(1, num_rounds + 1):
            replies = grid.send_and_receive(self.configure_train(current_round, arrays, grid))
            agg_arrays, _ = self.aggregate_train(current_round, replies)
            if agg_arrays is not None:
                arrays = agg_arrays
            replies = grid.send_and_receive(self.configure_evaluate(current_round, arrays, grid))
            self.aggregate_evaluate(current_round, replies)
            if after_round:
                after_round(current_round)
        return arrays
