"""The 2.7/2.8 external-process Client API: reads NVFLARE_CLIENT_MEMORY_GC_ROUNDS and cleans up
by itself after every N-th send."""

import os

from nvflare.fuel.utils.memory_utils import cleanup_memory
from nvflare.fuel.utils.pipe_channel import TrainerEnd


class ExProcessClientAPI(TrainerEnd):
    def __init__(self):
        super().__init__()
        self._memory_gc_rounds = int(os.environ.get("NVFLARE_CLIENT_MEMORY_GC_ROUNDS", "0"))
        self._round_count = 0

    def send(self, model, clear_cache=True):
        super().send(model, clear_cache)
        self._round_count += 1
        if self._memory_gc_rounds > 0 and self._round_count % self._memory_gc_rounds == 0:
            cleanup_memory()
