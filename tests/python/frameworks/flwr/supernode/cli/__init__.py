from .flower_supernode import flower_supernode as flower_supernode
from .flwr_clientapp import flwr_clientapp as flwr_clientapp
