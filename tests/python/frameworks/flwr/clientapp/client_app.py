"""The Message API ClientApp: @app.train() / @app.evaluate() handlers, or a legacy client_fn."""

from flwr.common import Message


class ClientApp:
    def __init__(self, client_fn=None):
        self._client_fn = client_fn
        self._handlers = {}

    def train(self, action="default"):
        # "train" for the default action, "train.<action>" for another.
        kind = "train" if action == "default" else f"train.{action}"

        def register(fn):
            self._handlers[kind] = fn
            return fn

        return register

    def evaluate(self):
        def register(fn):
            self._handlers["evaluate"] = fn
            return fn

        return register

    def __call__(self, message, context):
        kind = message.metadata.message_type
        if self._client_fn is not None:
            from flwr.client.client import maybe_call_evaluate, maybe_call_fit

            client = self._client_fn(context)
            call = maybe_call_fit if kind == "train" else maybe_call_evaluate
            return Message(call(client, message.content), reply_to=message)
        return self._handlers[kind](message, context)
