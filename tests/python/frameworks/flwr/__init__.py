"""Stand-in for Flower: legacy clients, the Message API ClientApp, the ServerApp strategies and
the SuperNode."""

from . import clientapp, serverapp

# Set after the subpackages, as Flower does: unknown while they load.
__version__ = "1.28.0"
