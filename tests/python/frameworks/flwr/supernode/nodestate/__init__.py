from .nodestate import NodeState as NodeState
from .nodestate_factory import NodeStateFactory as NodeStateFactory
