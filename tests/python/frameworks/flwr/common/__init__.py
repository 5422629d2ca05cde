"""Messages as JSON-able dicts: {"metadata": {...}, "content": {...}}."""


class Metadata:
    def __init__(self, message_type, group_id="", reply_to_message_id=""):
        self.message_type = message_type
        self.group_id = group_id
        self.reply_to_message_id = reply_to_message_id


class Message:
    def __init__(self, content, message_type="", group_id="", reply_to=None):
        if reply_to is not None:
            message_type = reply_to.metadata.message_type
            group_id = reply_to.metadata.group_id
        self.metadata = Metadata(message_type, group_id, "reply" if reply_to else "")
        self.content = content

    def to_dict(self):
        m = self.metadata
        return {"type": m.message_type, "group": m.group_id, "reply": m.reply_to_message_id,
                "content": self.content}

    @staticmethod
    def from_dict(d):
        msg = Message(d["content"], d["type"], d["group"])
        msg.metadata.reply_to_message_id = d["reply"]
        return msg


class Context:
    def __init__(self, node_id=0):
        self.node_id = node_id
        self.state = {}
