"""Messages: an instruction (content, type, group) or a reply to one; as JSON-able dicts on the
wire. The Metadata sits in the instance's __dict__ behind a property, as in Flower."""

import uuid

from flwr.app.metadata import Metadata


class Message:
    def __init__(self, content, message_type=None, group_id="", reply_to=None, message_id=None):
        reply_id = ""
        if reply_to is not None:
            message_type = reply_to.metadata.message_type
            group_id = reply_to.metadata.group_id
            reply_id = reply_to.metadata.message_id
        metadata = Metadata(message_id or uuid.uuid4().hex, reply_id, group_id, message_type)
        self.__dict__.update({"_metadata": metadata, "_content": content})

    @property
    def metadata(self):
        return self.__dict__["_metadata"]

    @property
    def content(self):
        return self.__dict__["_content"]

    def to_dict(self):
        m = self.metadata
        return {"id": m.message_id, "type": m.message_type, "group": m.group_id,
                "reply": m.reply_to_message_id, "content": self.content}

    @staticmethod
    def from_dict(d):
        msg = Message(d["content"], d["type"], d["group"], message_id=d["id"])
        msg.metadata.__dict__["_reply_to_message_id"] = d["reply"]
        return msg
