"""torch.cuda.empty_cache() runs on roundtrim's helper thread, which has no current context: it
must run inside the primary context of a device the program uses, never make the runtime create
one on device 0. A stand-in torch whose empty_cache does what the CUDA runtime does first on a
thread (fakecudaTestRuntimeCall: with no context current, device 0's primary context is made
current, and created when inactive) and the stand-in driver with two devices; the program uses
device 1 only. Round 1: the cache release runs. Round 2: the program has dropped its context (as
cudaDeviceReset does): the release is skipped rather than run somewhere. Prints the devices the
release ran on and the main thread's device at the end."""

import ctypes
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from round_wait import end_round  # noqa: E402
from standin_cuda import check, cu, primary_context, standin_torch  # noqa: E402

ran_on = []
standin_torch(is_initialized=lambda: True,
              empty_cache=lambda: ran_on.append(cu.fakecudaTestRuntimeCall()))

ptr = ctypes.c_uint64()
dev, ctx = primary_context(1)
check("cuMemAlloc_v2", ctypes.byref(ptr), ctypes.c_size_t(1 << 20))
check("cuMemFree_v2", ptr)
end_round(1)
check("cuCtxSetCurrent", None)
check("cuDevicePrimaryCtxRelease_v2", dev)
end_round(2)
check("cuCtxSetCurrent", ctx)  # the program's own thread keeps its device
main_dev = ctypes.c_int(-1)
check("cuCtxGetDevice", ctypes.byref(main_dev))
print(json.dumps({"ran_on": ran_on, "main_device": main_dev.value}), flush=True)
