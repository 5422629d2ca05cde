from .client import Client as Client
from .numpy_client import NumPyClient as NumPyClient
