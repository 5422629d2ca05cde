class ClientAPIBackendSpec:
    def initialize(self, context):
        raise NotImplementedError

    def execute(self, task_name, shareable, fl_ctx, abort_signal):
        raise NotImplementedError

    def finalize(self):
        raise NotImplementedError
