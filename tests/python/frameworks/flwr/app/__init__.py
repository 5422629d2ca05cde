from .metadata import Metadata as Metadata
