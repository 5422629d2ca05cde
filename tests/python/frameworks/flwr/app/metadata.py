"""A message's metadata. As in Flower, each field lives in the instance's __dict__ under a
leading underscore, behind a property; setting message_type validates it."""

_CATEGORIES = ("train", "evaluate", "query", "system")


class Metadata:
    def __init__(self, message_id, reply_to_message_id, group_id, message_type):
        self.__dict__.update({"_message_id": message_id,
                              "_reply_to_message_id": reply_to_message_id,
                              "_group_id": group_id})
        self.message_type = message_type

    @property
    def message_id(self):
        return self.__dict__["_message_id"]

    @property
    def reply_to_message_id(self):
        return self.__dict__["_reply_to_message_id"]

    @property
    def group_id(self):
        return self.__dict__["_group_id"]

    @property
    def message_type(self):
        return self.__dict__["_message_type"]

    @message_type.setter
    def message_type(self, value):
        category, _, action = value.partition(".")
        if category not in _CATEGORIES or (action and not action.isidentifier()):
            raise ValueError(f"Invalid message type: {value!r}")
        self.__dict__["_message_type"] = value
