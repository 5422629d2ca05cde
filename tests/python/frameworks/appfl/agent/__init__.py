from .client import ClientAgent as ClientAgent
from .server import ServerAgent as ServerAgent
