"""Loads the user's ClientApp and runs it on the one message this process handles."""

import importlib
import json

from flwr.common import Context, Message


def run_clientapp(app_ref, message_json):
    module, attr = app_ref.split(":")
    client_app = getattr(importlib.import_module(module), attr)
    message = Message.from_dict(json.loads(message_json))
    reply_message = client_app(message=message, context=Context())
    return json.dumps(reply_message.to_dict())
