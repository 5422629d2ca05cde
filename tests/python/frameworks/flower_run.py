"""Plays a Flower federation of two nodes for N rounds (train, then evaluate, in each).

    flower_run.py deployment APP ROUNDS [STRATEGY [FRACTION_TRAIN]]
        this process is the ServerApp (the SuperLink's relay is played here too); two
        flower-supernode processes, each launching one flwr-clientapp process per message;
        FRACTION_TRAIN 0 makes it a federated evaluation (evaluate messages only)
    flower_run.py legacy ROUNDS
        two long-lived start_client() processes with a NumPyClient
"""

import json
import os
import subprocess
import sys

from fw_sync import wait_rounds

HERE = os.path.dirname(os.path.abspath(__file__))


class Grid:
    def __init__(self, argv):
        self.nodes = [
            subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            for _ in range(2)
        ]

    def send_and_receive(self, messages):
        from flwr.common import Message

        sent = list(zip(self.nodes, messages))
        for node, msg in sent:
            node.stdin.write(json.dumps(msg.to_dict()) + "\n")
            node.stdin.flush()
        return [Message.from_dict(json.loads(n.stdout.readline())) for n, _ in sent]

    def close(self):
        for n in self.nodes:
            n.stdin.write("null\n")
            n.stdin.close()
        return [n.wait(timeout=60) for n in self.nodes]


def deployment(app, rounds, strategy_name, fraction_train):
    import flwr.serverapp.strategy as strategies

    # The console scripts flower-supernode and flwr-clientapp call these functions.
    grid = Grid([sys.executable, "-c", "from flwr.supernode.cli import flower_supernode as f; f()",
                 "--app", app])

    def after_round(r):
        for node in grid.nodes:  # one round per train reply pushed
            wait_rounds(r if fraction_train else 0, timeout=5, pid=node.pid)
        wait_rounds(r, timeout=5)

    import flower_apps

    strategy_class = getattr(strategies, strategy_name, None) or getattr(flower_apps, strategy_name)
    strategy = strategy_class(fraction_train=fraction_train)
    arrays = strategy.start(grid, [0.0, 0.0], rounds, after_round)
    print(json.dumps({"arrays": arrays, "exit": grid.close(),
                      "nodes": [n.pid for n in grid.nodes]}))


def legacy(rounds):
    from flwr.server import Server

    grid = Grid([sys.executable, os.path.join(HERE, "flower_legacy_client.py")])

    def client_fit(node):
        def fit(params):
            for kind in ("train", "evaluate"):
                node.stdin.write(json.dumps({"type": kind, "content": {"parameters": params}}))
                node.stdin.write("\n")
                node.stdin.flush()
                reply = json.loads(node.stdout.readline())
                if kind == "train":
                    new = reply["parameters"]
            return new

        return fit

    def after_round(r):
        for node in grid.nodes:
            wait_rounds(r, timeout=5, pid=node.pid)
        wait_rounds(r, timeout=5)

    server = Server([client_fit(n) for n in grid.nodes])
    params = server.fit(rounds, after_round=after_round)
    print(json.dumps({"arrays": params, "exit": grid.close(), "nodes": [n.pid for n in grid.nodes]}))


if __name__ == "__main__":
    if sys.argv[1] == "deployment":
        deployment(sys.argv[2], int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else "FedAvg",
                   float(sys.argv[5]) if len(sys.argv) > 5 else 1.0)
    else:
        legacy(int(sys.argv[2]))
