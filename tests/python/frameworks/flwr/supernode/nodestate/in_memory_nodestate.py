"""The NodeState the SuperNode uses: a dict of messages under a lock, shared by the main loop and
the ClientAppIo API's thread."""

import threading
from dataclasses import dataclass

from .nodestate import NodeState


@dataclass
class MessageEntry:
    message: object
    is_retrieved: bool = False


class InMemoryNodeState(NodeState):
    def __init__(self):
        self.msg_store = {}
        self.lock_msg_store = threading.RLock()

    def store_message(self, message):
        with self.lock_msg_store:
            msg_id = message.metadata.message_id
            if msg_id == "" or msg_id in self.msg_store:
                return None
            self.msg_store[msg_id] = MessageEntry(message=message)
            return msg_id

    def get_messages(self, *, is_reply=None, limit=None):
        taken = []
        with self.lock_msg_store:
            for entry in self.msg_store.values():
                is_reply_message = entry.message.metadata.reply_to_message_id != ""
                if entry.is_retrieved or (is_reply is not None and is_reply != is_reply_message):
                    continue
                entry.is_retrieved = True
                taken.append(entry.message)
                if limit is not None and len(taken) >= limit:
                    break
        return taken

    def delete_messages(self, *, message_ids=None):
        with self.lock_msg_store:
            if message_ids is None:
                self.msg_store.clear()
            for msg_id in message_ids or ():
                self.msg_store.pop(msg_id, None)
