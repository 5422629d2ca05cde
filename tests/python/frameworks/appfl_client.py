"""An APPFL client process: load the global model, train, send the local model, per round."""

import json
import sys

from appfl.agent import ClientAgent
from fw_sync import own_rounds, wait_rounds

agent = ClientAgent()
for line in sys.stdin:
    model = json.loads(line)
    if model is None:
        break
    agent.load_parameters(model)
    before = own_rounds()
    agent.train()
    wait_rounds(before + 1, timeout=5)
    sys.stdout.write(json.dumps(agent.get_parameters()) + "\n")
    sys.stdout.flush()
