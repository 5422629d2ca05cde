"""Stand-in for NVIDIA FLARE: the Client API and the Client API executors."""

import os

# The version a test plays (main by default); set before anything else, as NVFlare does.
__version__ = os.environ.get("FAKE_NVFLARE_VERSION", "2.9.0dev0")
