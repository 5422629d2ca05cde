import os


def optimize_memory():
    """APPFL collects garbage itself by default (optimize_memory); the tests turn it off here."""
    return os.environ.get("FAKE_APPFL_OPTIMIZE_MEMORY", "1") == "1"
