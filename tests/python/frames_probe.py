"""Reads its own Python stack through the frame probe library (argv[1]) from known places and
prints one JSON object: the frames (file, function, line) each place got. Lines marked
`# frame:NAME` are the lines the frames must name."""

import ctypes
import json
import sys
import threading

held = ctypes.PyDLL(sys.argv[1])  # the GIL stays held during the call
released = ctypes.CDLL(sys.argv[1])  # the GIL is released for the call
for lib in (held, released):
    lib.probe_stack.restype = ctypes.c_int
    lib.probe_stack.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_size_t]
held.probe_unavailable.restype = ctypes.c_char_p
held.probe_cache_utf8.argtypes = [ctypes.py_object]


def stack(lib, name_len=512):
    buf = ctypes.create_string_buffer(16384)
    n = lib.probe_stack(buf, len(buf), name_len)  # frame:stack
    text = buf.value.decode("utf-8")  # strict: the probe must give valid UTF-8
    frames = [l.split("\t") for l in text.splitlines()]
    return {"n": n, "frames": [{"file": f, "function": fn, "line": int(l)} for f, fn, l in frames]}


class Client:
    def receive_model(self, lib):
        return stack(lib)  # frame:receive_model

    def run_round(self, lib):
        return self.receive_model(lib)  # frame:run_round


def modèle_reçu(lib, name_len=512):
    return stack(lib, name_len)  # frame:latin1


def 模型(lib, name_len=512):
    return stack(lib, name_len)  # frame:ucs2


def 𐀀(lib, name_len=512):
    return stack(lib, name_len)  # frame:ucs4


def cached_模型(lib, name_len=512):
    return stack(lib, name_len)  # frame:cached


def produce(lib):
    yield stack(lib)  # frame:generator


def main():
    out = {"unavailable": held.probe_unavailable().decode()}
    out["held"] = Client().run_round(held)  # frame:main
    out["released"] = Client().run_round(released)  # frame:released
    out["native_thread"] = held.probe_native_thread()
    if out["unavailable"]:
        return out
    out["latin1"] = modèle_reçu(held)
    out["ucs2"] = 模型(held)
    out["ucs4"] = 𐀀(held)
    out["cached_utf8"] = held.probe_cache_utf8(cached_模型.__code__.co_qualname)
    out["cached"] = cached_模型(held)
    out["cut_ucs2"] = 模型(held, 6)
    out["cut_cached"] = cached_模型(held, 9)
    out["generator"] = next(produce(held))
    seen = {}
    worker = threading.Thread(target=lambda: seen.update(t=Client().run_round(held)))  # frame:thread
    worker.start()
    worker.join()
    out["thread"] = seen["t"]
    # A thread that released the GIL while the main thread runs Python code (holding it).
    worker = threading.Thread(target=lambda: seen.update(r=Client().run_round(released)))  # frame:thread_released
    worker.start()
    while worker.is_alive():
        pass
    worker.join()
    out["thread_released"] = seen["r"]
    return out


print(json.dumps(main()))  # frame:module
