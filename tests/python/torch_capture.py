"""torch.cuda.empty_cache() must not run while a CUDA stream capture is active anywhere in the
process. A stand-in torch (only what roundtrim reads: sys.modules["torch.cuda"], is_initialized,
empty_cache) and the stand-in driver, reached through ctypes so that the capture goes through
roundtrim's driver hooks. Round 1: no capture; round 2: a capture is active; round 3: it ended;
round 4: another thread begins one after roundtrim queued the step (from is_initialized(), which
roundtrim calls right before its last check). Prints the rounds in which empty_cache ran."""

import ctypes
import json
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from round_wait import end_round  # noqa: E402
from standin_cuda import check, primary_context, standin_torch  # noqa: E402

ran_in = []
round_no = 1



def is_initialized():
    if round_no == 4 and not captured:
        t = threading.Thread(target=begin_capture)
        t.start()
        t.join()
    return True


standin_torch(is_initialized=is_initialized, empty_cache=lambda: ran_in.append(round_no))

captured = []


def begin_capture():
    check("cuCtxSetCurrent", ctx)  # the context is current per thread
    check("cuStreamBeginCapture_v2", stream, 0)
    captured.append(True)


ptr, graph = ctypes.c_uint64(), ctypes.c_void_p()
stream = ctypes.c_void_p(0x10)
_, ctx = primary_context(0)
check("cuMemAlloc_v2", ctypes.byref(ptr), ctypes.c_size_t(1 << 20))

end_round(1)
round_no = 2
check("cuStreamBeginCapture_v2", stream, 0)
end_round(2)
check("cuStreamEndCapture", stream, ctypes.byref(graph))
round_no = 3
end_round(3)
round_no = 4
end_round(4)
check("cuStreamEndCapture", stream, ctypes.byref(graph))
print(json.dumps({"empty_cache_rounds": ran_in, "captured": len(captured)}), flush=True)
