"""What the out-of-process backends share: one trainer reached over a channel."""

import os

from nvflare.app_common.executors.client_api.backend_spec import ClientAPIBackendSpec
from nvflare.fuel.utils.pipe_channel import JobEnd


class CellBackendBase(ClientAPIBackendSpec):
    def initialize(self, context):
        env = dict(os.environ, FAKE_NVFLARE_CHANNEL="pipe")
        self.trainer = JobEnd(context["command"], env)

    def execute(self, task_name, shareable, fl_ctx, abort_signal):
        return self.trainer.exchange(shareable)

    def finalize(self):
        return self.trainer.stop()
