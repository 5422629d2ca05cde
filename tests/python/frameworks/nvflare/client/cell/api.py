"""The trainer side of main's external-process mode: no cleanup of its own."""

from nvflare.fuel.utils.pipe_channel import TrainerEnd


class CellClientAPI(TrainerEnd):
    pass
