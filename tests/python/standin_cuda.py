"""What the CUDA test programs share: the stand-in driver through ctypes, so that their calls
go through roundtrim's driver hooks, and a stand-in torch with only the torch.cuda functions a
test gives it (what roundtrim reads and calls)."""

import ctypes
import sys
import types

cu = ctypes.CDLL("libcuda.so.1")


def check(name, *args):
    """Calls the driver's entry point name; ends the program on an error."""
    rc = getattr(cu, name)(*args)
    if rc != 0:
        raise SystemExit(f"{name}: {rc}")


def primary_context(ordinal):
    """Initializes the driver and makes device ordinal's primary context current on this thread;
    returns (device, context)."""
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    check("cuInit", 0)
    check("cuDeviceGet", ctypes.byref(dev), ordinal)
    check("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
    check("cuCtxSetCurrent", ctx)
    return dev, ctx


def standin_torch(**cuda_functions):
    """Registers a torch module whose torch.cuda has these functions, as an imported torch
    would be; returns torch.cuda."""
    cuda = types.ModuleType("torch.cuda")
    for name, fn in cuda_functions.items():
        setattr(cuda, name, fn)
    torch = types.ModuleType("torch")
    torch.cuda = cuda
    sys.modules["torch"] = torch
    sys.modules["torch.cuda"] = cuda
    return cuda
