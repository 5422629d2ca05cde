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
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from round_wait import end_round  # noqa: E402

ran_in = []
round_no = 1



def is_initialized():
    if round_no == 4 and not captured:
        t = threading.Thread(target=begin_capture)
        t.start()
        t.join()
    return True


cuda = types.ModuleType("torch.cuda")
cuda.is_initialized = is_initialized
cuda.empty_cache = lambda: ran_in.append(round_no)
torch = types.ModuleType("torch")
torch.cuda = cuda
sys.modules["torch"] = torch
sys.modules["torch.cuda"] = cuda

cu = ctypes.CDLL("libcuda.so.1")


def check(name, *args):
    rc = getattr(cu, name)(*args)
    if rc != 0:
        raise SystemExit(f"{name}: {rc}")


captured = []


def begin_capture():
    check("cuCtxSetCurrent", ctx)  # the context is current per thread
    check("cuStreamBeginCapture_v2", stream, 0)
    captured.append(True)


dev, ctx, ptr, graph = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64(), ctypes.c_void_p()
stream = ctypes.c_void_p(0x10)
check("cuInit", 0)
check("cuDeviceGet", ctypes.byref(dev), 0)
check("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
check("cuCtxSetCurrent", ctx)
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
