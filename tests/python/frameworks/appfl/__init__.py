"""Stand-in for APPFL: client and server agents, the synchronous scheduler, FedAvg."""
