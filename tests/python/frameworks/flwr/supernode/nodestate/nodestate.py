"""What a SuperNode keeps between its threads: the messages it pulled and the replies its
ClientApps handed back."""

import abc


class NodeState(abc.ABC):
    @abc.abstractmethod
    def store_message(self, message):
        """Stores an instruction or a reply; returns its ID, or None when it is already there."""

    @abc.abstractmethod
    def get_messages(self, *, is_reply=None, limit=None):
        """Takes the messages not yet taken (instructions, replies or both)."""

    @abc.abstractmethod
    def delete_messages(self, *, message_ids=None):
        """Forgets these messages (all of them without IDs)."""
