"""Plays an APPFL federation of two clients for N rounds.

    appfl_run.py serial ROUNDS   server and both clients in this one process
    appfl_run.py grpc ROUNDS     this process is the server; two client processes
"""

import json
import os
import subprocess
import sys

from appfl.agent import ClientAgent, ServerAgent
from fw_sync import wait_rounds

HERE = os.path.dirname(os.path.abspath(__file__))


def serial(rounds):
    server = ServerAgent(num_clients=2)
    clients = [ClientAgent(), ClientAgent()]
    model = None
    for r in range(1, rounds + 1):
        for i, c in enumerate(clients):
            c.train()
            model = server.global_update(i, c.get_parameters()) or model
        for c in clients:
            c.load_parameters(model)
        wait_rounds(r, timeout=5)
    return model, []


def grpc(rounds):
    server = ServerAgent(num_clients=2)
    procs = [
        subprocess.Popen([sys.executable, os.path.join(HERE, "appfl_client.py")],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    model = [0.0, 0.0]
    for r in range(1, rounds + 1):
        for p in procs:
            p.stdin.write(json.dumps(model) + "\n")
            p.stdin.flush()
        new = None
        for i, p in enumerate(procs):
            new = server.global_update(i, json.loads(p.stdout.readline())) or new
        model = new
        wait_rounds(r, timeout=5)
    for p in procs:
        p.stdin.write("null\n")
        p.stdin.close()
    return model, [p.wait(timeout=60) for p in procs]


if __name__ == "__main__":
    model, codes = (serial if sys.argv[1] == "serial" else grpc)(int(sys.argv[2]))
    print(json.dumps({"model": model, "exit": codes}))
