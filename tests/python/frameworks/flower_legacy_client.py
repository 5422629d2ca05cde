"""A legacy Flower client process: start_client() with a NumPyClient."""

from flower_apps import FlowerClient
from flwr.compat.client.app import start_client

start_client(server_address="127.0.0.1:9092", client=FlowerClient())
