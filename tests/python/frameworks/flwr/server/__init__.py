from .server import Server as Server
