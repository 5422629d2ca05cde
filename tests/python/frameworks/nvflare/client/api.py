"""The Client API module functions: each forwards to the process's client API object."""

import os

_api = None


def _make_api():
    if os.environ.get("FAKE_NVFLARE_CHANNEL") == "pipe":
        import nvflare

        if nvflare.__version__.startswith(("2.7", "2.8")):
            from nvflare.client.ex_process.api import ExProcessClientAPI

            return ExProcessClientAPI()
        from nvflare.client.cell.api import CellClientAPI

        return CellClientAPI()
    from nvflare.client.in_process.api import InProcessClientAPI

    return InProcessClientAPI()


def init(rank=None, config_file=None):
    global _api
    _api = _make_api()
    return _api


def receive(timeout=None):
    return _api.receive()


def send(model, clear_cache=True):
    _api.send(model, clear_cache)


def is_running():
    return _api.is_running()
