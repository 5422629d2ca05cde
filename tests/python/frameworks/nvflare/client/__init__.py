from .api import init as init
from .api import is_running as is_running
from .api import receive as receive
from .api import send as send
from .decorator import train as train
