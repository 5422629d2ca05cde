"""@flare.train: receive the model, run the function, send its result."""

import functools

from . import api


def train(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        model = api.receive()
        result = fn(model, *args, **kwargs)
        api.send(result)
        return result

    return wrapper
