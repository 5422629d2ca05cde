#!/usr/bin/env bash
# Real-GPU check of the CUDA hooks: PyTorch programs under the preloaded library, on a machine with
# an NVIDIA GPU and PyTorch with CUDA. Without them it prints SKIP and exits 0.
#
#   tests/gpu/run.sh            (from anywhere; builds the library when missing)
#
# What it checks, and the figures it prints:
#   1. counting, for the native caching allocator, expandable segments and the cudaMallocAsync
#      backend, over a training loop of matrix products (cuBLAS) with a cleanup every 2 rounds:
#      - cuda_alloc_bytes - cuda_free_bytes equals the change of cuda_live_bytes, every round;
#      - cuda_live_bytes is at least torch.cuda.memory_reserved() (everything PyTorch reserved is
#        counted) and at most GPU_EXTRA_MAX_MIB above it: the rest is memory libraries allocate
#        outside PyTorch's allocator (cuBLAS/cuBLASLt workspaces, tens of MiB on Hopper);
#      - from round 2 on, cuda_live_bytes moves round to round exactly as memory_reserved() does,
#        within GPU_DELTA_TOL_MIB (the libraries' own memory is allocated once, in round 1);
#      - a cleanup round after freed blocks lowers the driver's used memory (cudaMemGetInfo), every
#        cleanup round releases the 512 MiB the round before left cached (however long the gc
#        took), and the record's released bytes are what the driver got back;
#      - the record's device_live + device_cached is what PyTorch reserved plus the libraries'
#        own, and device_cached is never more than PyTorch's cache (nothing counted twice).
#      (cudaMallocAsync: live follows the stream-ordered blocks, so it is compared with
#      memory_allocated() instead, and PyTorch's own empty_cache trims the pool first.)
#   2. a CUDA graph captured on another stream while a cleanup round runs: the round skips the
#      cache release, the synchronize, the pool trim and the mem info, and the graph replays
#      correctly;
#   3. contexts: the program selects its device with torch.cuda.set_device() (the last GPU, not
#      CUDA_VISIBLE_DEVICES) and runs cleanup rounds with the cache release; nvidia-smi
#      --query-compute-apps must list the process on that GPU only;
#   4. the cost of a cudaMalloc + cudaFree pair (1 MiB) bare and under the library;
#   5. the diagnosis of device growth: a program that keeps a 64 MiB tensor every round is a leak
#      (device_live grows 64 MiB a round), one whose freed tensors grow the cache with cleanup
#      off is the CUDA cache (device_cached grows 64 MiB a round).
#   6. the stack users run, each bare and under the library with a cleanup every round, the same
#      result required (a stack whose bare run fails is SKIPped with its error: an image problem):
#      JAX (import, a jitted loop over rounds, with and without preallocation; cuda_live_bytes at
#      least what JAX's allocator holds), CuPy (arrays freed into its pool are device_cached and
#      each cleanup round releases the pool: cupy_free_blocks, the bytes the driver got back),
#      torch.compile of a transformer block with empty Inductor and Triton caches, a numba-cuda
#      kernel, PyTorch with a DataLoader whose workers are forked.
# Settings: PYTHON (default python3), ROUNDTRIM_LIB, GPU_EXTRA_MAX_MIB (512), GPU_DELTA_TOL_MIB (0),
# GPU_KEEP (a folder: the programs' outputs, errors and round logs are copied there at the end).
set -euo pipefail

cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python3}
LIB=${ROUNDTRIM_LIB:-$PWD/build/libroundtrim.so}
EXTRA_MAX_MIB=${GPU_EXTRA_MAX_MIB:-512}
DELTA_TOL_MIB=${GPU_DELTA_TOL_MIB:-0}

skip() {
    echo "SKIP: $*"
    exit 0
}

command -v nvidia-smi >/dev/null 2>&1 || skip "no nvidia-smi: this machine has no NVIDIA driver"
nvidia-smi -L >/dev/null 2>&1 || skip "nvidia-smi finds no GPU"
"$PYTHON" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
    skip "PyTorch with CUDA is not importable by $PYTHON (or sees no GPU)"
[[ -f $LIB ]] || make lib >/dev/null
[[ -f $LIB ]] || {
    echo "FAIL: $LIB was not built"
    exit 1
}

tmp=$(mktemp -d)
keep() {
    [[ -n ${GPU_KEEP:-} ]] && mkdir -p "$GPU_KEEP" && tar -C "$tmp" -czf "$GPU_KEEP/gpu-run.tar.gz" .
    rm -rf "$tmp"
}
trap keep EXIT

# Shared by the Python programs below: round marking through the library, waiting for the record.
cat >"$tmp/rt.py" <<'EOF'
import ctypes, json, os, sys, time

LOG = os.environ.get("ROUNDTRIM_LOG", "")
MiB = 1 << 20


def records():
    try:
        with open(LOG) as f:
            return [json.loads(l) for l in f if l.strip()]
    except FileNotFoundError:
        return []


def round_end(n, sync=True):
    """Marks round n and waits (running bytecode, so that the helper gets the GIL) for its record."""
    import torch
    if sync:
        torch.cuda.synchronize()
    ctypes.CDLL(None).roundtrim_round_end()
    deadline = time.time() + 60
    while time.time() < deadline:
        rounds = [r for r in records() if r.get("event") == "round"]
        if len(rounds) >= n:
            return rounds[n - 1]
        time.sleep(0.01)
    sys.exit(f"round {n} never reached the log")


def used_mem():
    import torch
    free, total = torch.cuda.mem_get_info()
    return total - free
EOF

# 1. Counting.
cat >"$tmp/train.py" <<'EOF'
import json, sys
import torch
from rt import MiB, round_end, used_mem

dev = torch.device("cuda")
model = torch.nn.Sequential(
    torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
w = torch.randn(2048, 2048, device=dev)
out = []
for n in range(1, 9):
    batch = 256 * n  # every round needs more memory than the last
    for _ in range(5):
        x = torch.randn(batch, 1024, device=dev)
        loss = model(x).pow(2).mean() + (w @ w.T).mean() * 0  # matrix products: cuBLAS
        opt.zero_grad()
        loss.backward()
        opt.step()
    del x, loss
    if n % 2 == 1:
        big = torch.empty(512 * MiB, dtype=torch.uint8, device=dev)  # freed: left in the cache
        del big
    torch.cuda.synchronize()
    reserved, allocated, used_before = (torch.cuda.memory_reserved(),
                                        torch.cuda.memory_allocated(), used_mem())
    rec = round_end(n)
    torch.cuda.synchronize()
    out.append({"round": n, "reserved": reserved, "allocated": allocated,
                "used_before": used_before, "used_after": used_mem(), "record": rec})
print(json.dumps(out))
EOF

cat >"$tmp/check_counts.py" <<'EOF'
import json, sys
mode, path, extra_max, tol = sys.argv[1], sys.argv[2], int(sys.argv[3]) << 20, int(sys.argv[4]) << 20
rows = json.loads(open(path).read().strip().splitlines()[-1])
MiB = 1 << 20
fail, prev = [], None
print(f"[{mode}] round reserved_MiB live_MiB extra_MiB alloc_MiB free_MiB cleanup used_before->after_MiB")
for row in rows:
    r, n = row["record"], row["round"]
    if "cuda_live_bytes" not in r:
        fail.append(f"round {n}: no cuda_ keys in the record (driver calls not seen)")
        continue
    live, alloc, freed = r["cuda_live_bytes"], r["cuda_alloc_bytes"], r["cuda_free_bytes"]
    extra = live - row["reserved"]
    cleanup = r.get("cleanup", [])
    print(f"[{mode}] {n:5d} {row['reserved'] / MiB:12.1f} {live / MiB:8.1f} {extra / MiB:9.1f} "
          f"{alloc / MiB:9.1f} {freed / MiB:8.1f} {','.join(cleanup) or '-'} "
          f"{row['used_before'] / MiB:.0f}->{row['used_after'] / MiB:.0f}")
    if prev is not None and alloc - freed != live - prev["record"]["cuda_live_bytes"]:
        fail.append(f"round {n}: alloc-free {alloc - freed} != live change")
    if mode != "async":
        if not 0 <= extra <= extra_max:
            fail.append(f"round {n}: live - reserved = {extra / MiB:.1f} MiB, not in [0, {extra_max / MiB:.0f}]")
        if prev is not None and n > 2:
            d_live = live - prev["record"]["cuda_live_bytes"]
            d_res = row["reserved"] - prev["reserved"]
            if abs(d_live - d_res) > tol:
                fail.append(f"round {n}: live moved {d_live} bytes, memory_reserved {d_res}")
    elif live < row["allocated"]:
        fail.append(f"round {n}: live {live} < memory_allocated {row['allocated']}")
    if "torch_empty_cache" in cleanup or r.get("cuda_pool_trim_bytes", 0) > 0:
        if not row["used_after"] < row["used_before"]:
            fail.append(f"round {n}: the cleanup did not lower the driver's used memory")
    # The record's split of device memory: live + cached is what the process holds (PyTorch's
    # reserve and the libraries' own), cached never counted twice.
    mem = r.get("memory") or {}
    if "device_cached" not in mem or "device_live" not in mem:
        fail.append(f"round {n}: no device_live/device_cached in the memory reading "
                    f"({r.get('memory_skipped') or mem.get('device_cached_skipped')})")
    else:
        held = mem["device_live"] + mem["device_cached"]
        if not row["reserved"] <= held <= row["reserved"] + extra_max:
            fail.append(f"round {n}: device_live + device_cached = {held / MiB:.1f} MiB, "
                        f"memory_reserved {row['reserved'] / MiB:.1f} MiB")
        if mem["device_cached"] > row["reserved"] - row["allocated"] + tol + 64 * MiB:
            fail.append(f"round {n}: device_cached {mem['device_cached'] / MiB:.1f} MiB is more "
                        f"than PyTorch keeps ({(row['reserved'] - row['allocated']) / MiB:.1f} MiB)")
    # Every cleanup round follows a round that left a freed 512 MiB block in the cache: the
    # release runs, and what the record says it gave back is what the driver got back.
    if n % 2 == 0:
        released = r.get("torch_released_bytes", 0) + r.get("cuda_pool_trim_bytes", 0)
        drop = row["used_before"] - row["used_after"]
        print(f"[{mode}] {n:5d} cached before {mem.get('device_cached', 0) / MiB:.1f} MiB, "
              f"released {released / MiB:.1f} MiB (record), {drop / MiB:.1f} MiB (driver); "
              f"skipped: {r.get('torch_empty_cache_skipped')}")
        if "torch_empty_cache" not in cleanup:
            fail.append(f"round {n}: 512 MiB cached and no release "
                        f"({r.get('torch_empty_cache_skipped')})")
        elif released < 480 * MiB or abs(released - drop) > 64 * MiB:
            fail.append(f"round {n}: the record says {released / MiB:.1f} MiB released, "
                        f"the driver's used memory fell {drop / MiB:.1f} MiB")
    prev = row
cleaned = [row for row in rows if "torch_empty_cache" in row["record"].get("cleanup", [])]
if not cleaned:
    fail.append("no round ran torch_empty_cache")
for f in fail:
    print(f"FAIL [{mode}]: {f}")
print(f"[{mode}] {'FAIL' if fail else 'PASS'}")
sys.exit(1 if fail else 0)
EOF

# 2. A graph captured while a cleanup round runs.
cat >"$tmp/capture.py" <<'EOF'
import json, threading, time
import torch
from rt import MiB, records, round_end

dev = torch.device("cuda")
a = torch.randn(1024, 1024, device=dev)
b = torch.randn(1024, 1024, device=dev)
junk = torch.empty(256 * MiB, dtype=torch.uint8, device=dev)
del junk  # something for a cleanup to release
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):  # warm-up outside the capture, as PyTorch asks
    c = a @ b
torch.cuda.current_stream().wait_stream(s)
torch.cuda.synchronize()
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    c = a @ b
    rec = round_end(1, sync=False)  # the cleanup runs while the capture is active
    c = c + 1
g.replay()
torch.cuda.synchronize()
ok = torch.allclose(c, a @ b + 1, rtol=1e-3, atol=1e-3)
after = round_end(2)
print(json.dumps({"replay_ok": bool(ok), "during": rec, "after": after}))
EOF

# 3. Contexts: the device is selected with set_device, not CUDA_VISIBLE_DEVICES.
cat >"$tmp/device.py" <<'EOF'
import json, os, subprocess
import torch
from rt import MiB, round_end

k = torch.cuda.device_count() - 1
torch.cuda.set_device(k)
x = torch.randn(4096, 4096, device="cuda")
for n in range(1, 4):
    y = x @ x
    big = torch.empty(256 * MiB, dtype=torch.uint8, device="cuda")
    del big, y
    rec = round_end(n)


def smi(query):
    out = subprocess.run(["nvidia-smi", f"--query-{query}", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True).stdout
    return [[f.strip() for f in line.split(",")] for line in out.splitlines() if line.strip()]


index = {uuid: int(i) for i, uuid in smi("gpu=index,uuid")}
mine = sorted(index.get(uuid, -1) for pid, uuid, *_ in smi("compute-apps=pid,gpu_uuid,used_memory")
              if pid == str(os.getpid()))
print(json.dumps({"selected": k, "gpus": len(index), "listed_on": mine,
                  "cleanup": rec.get("cleanup", [])}))
EOF

# 5. The diagnosis of device memory growth: tensors the program keeps (a leak no cleanup can fix)
#    against a cache that grows (what the release fixes).
cat >"$tmp/grow.py" <<'EOF'
import sys
import torch
from rt import MiB, round_end

how = sys.argv[1]
dev = torch.device("cuda")
keep = []
w = torch.randn(1024, 1024, device=dev)
for n in range(1, 11):
    y = w @ w
    if how == "kept":
        keep.append(torch.empty(64 * MiB, dtype=torch.uint8, device=dev))  # kept every round
    else:
        # n blocks at once, all freed: one more each round stays in the cache
        tmp = [torch.empty(64 * MiB, dtype=torch.uint8, device=dev) for _ in range(n)]
        del tmp
    del y
    round_end(n)
EOF

# 4. Cost of a cudaMalloc/cudaFree pair, through the libcudart PyTorch loaded.
cat >"$tmp/pair_cost.py" <<'EOF'
import ctypes, json, statistics, time
import torch

torch.cuda.init()
torch.zeros(1, device="cuda")
path = next(l.split()[-1] for l in open("/proc/self/maps") if "libcudart" in l)
rt = ctypes.CDLL(path)
ptr = ctypes.c_void_p()
per_pair = []
for rep in range(5):
    n = 2000
    t0 = time.perf_counter_ns()
    for _ in range(n):
        rt.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(1 << 20))
        rt.cudaFree(ptr)
    per_pair.append((time.perf_counter_ns() - t0) / n)
print(json.dumps({"ns_per_pair": statistics.median(per_pair)}))
EOF

run_shimmed() { # log_file, then the command
    local log=$1
    shift
    env LD_PRELOAD="$LIB" ROUNDTRIM_LOG="$log" ROUNDTRIM_GC_ROUNDS="${GC_ROUNDS:-2}" \
        ROUNDTRIM_CUDA_EMPTY_CACHE=true \
        PYTHONPATH="$tmp" "$@"
}

status=0
for mode in native expandable async; do
    case $mode in
    native) conf="" ;;
    expandable) conf="expandable_segments:True" ;;
    async) conf="backend:cudaMallocAsync" ;;
    esac
    if ! PYTORCH_CUDA_ALLOC_CONF=$conf run_shimmed "$tmp/$mode.jsonl" \
        "$PYTHON" "$tmp/train.py" >"$tmp/$mode.out" 2>"$tmp/$mode.err"; then
        echo "FAIL [$mode]: the training run failed"
        tail -20 "$tmp/$mode.err"
        status=1
        continue
    fi
    "$PYTHON" "$tmp/check_counts.py" "$mode" "$tmp/$mode.out" "$EXTRA_MAX_MIB" "$DELTA_TOL_MIB" ||
        status=1
done

if GC_ROUNDS=1 run_shimmed "$tmp/capture.jsonl" "$PYTHON" "$tmp/capture.py" \
    >"$tmp/capture.out" 2>"$tmp/capture.err"; then
    "$PYTHON" - "$tmp/capture.out" <<'EOF' || status=1
import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
during, after = r["during"], r["after"]
print(f"[capture] during: cleanup={during.get('cleanup')} "
      f"torch_empty_cache_skipped={during.get('torch_empty_cache_skipped')} "
      f"cuda_pool_trim_skipped={during.get('cuda_pool_trim_skipped')} "
      f"cuda_mem_info_skipped={during.get('cuda_mem_info_skipped')}; replay_ok={r['replay_ok']}")
fail = []
if not r["replay_ok"]:
    fail.append("the graph captured across the cleanup replays wrong")
if any(a in during.get("cleanup", []) for a in ("torch_empty_cache", "cuda_pool_trim")):
    fail.append("a cache release or pool trim ran during the capture")
if during.get("torch_empty_cache_skipped") != "cuda_capture":
    fail.append("the cache release was not skipped for the capture")
if "cuda_free_mem" in during:
    fail.append("mem info was read during the capture")
for f in fail:
    print(f"FAIL [capture]: {f}")
print(f"[capture] {'FAIL' if fail else 'PASS'}")
sys.exit(1 if fail else 0)
EOF
else
    echo "FAIL [capture]: the capture run failed (a cleanup invalidated the capture?)"
    tail -20 "$tmp/capture.err"
    status=1
fi

if GC_ROUNDS=1 run_shimmed "$tmp/device.jsonl" "$PYTHON" "$tmp/device.py" \
    >"$tmp/device.out" 2>"$tmp/device.err"; then
    "$PYTHON" - "$tmp/device.out" <<'EOF' || status=1
import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
print(f"[contexts] {r['gpus']} GPU(s), selected {r['selected']}, the process is listed on "
      f"{r['listed_on'] or 'none'} (nvidia-smi --query-compute-apps); last cleanup {r['cleanup']}")
if not r["listed_on"]:
    print("[contexts] WARN: nvidia-smi lists no process of ours (another PID namespace?): not checked")
    sys.exit(0)
ok = r["listed_on"] == [r["selected"]]
if not ok:
    print(f"FAIL [contexts]: contexts on {r['listed_on']}, the program selected {r['selected']}")
print(f"[contexts] {'PASS' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)
EOF
else
    echo "FAIL [contexts]: the run failed"
    tail -20 "$tmp/device.err"
    status=1
fi

for how in kept cached; do
    gc=1
    [[ $how == cached ]] && gc=0 # no cleanup: the cache is left to grow
    if GC_ROUNDS=$gc run_shimmed "$tmp/grow_$how.jsonl" "$PYTHON" "$tmp/grow.py" "$how" \
        >"$tmp/grow_$how.out" 2>"$tmp/grow_$how.err"; then
        "$PYTHON" - "$tmp/grow_$how.jsonl" "$how" <<'EOF' || status=1
import json, sys
path, how = sys.argv[1], sys.argv[2]
recs = [json.loads(l) for l in open(path) if l.strip()]
diag = [r for r in recs if r.get("event") == "diagnosis"]
MiB = 1 << 20
if not diag:
    print(f"FAIL [diagnosis {how}]: no diagnosis record")
    sys.exit(1)
d = diag[-1]
slopes = d.get("slopes", {})
print(f"[diagnosis {how}] cause {d.get('cause')} ({d.get('decided_by')}), growth "
      f"{d.get('growth_bytes_per_round', 0) / MiB:.1f} MiB/round, device_live "
      f"{slopes.get('device_live', 0) / MiB:.1f}, device_cached "
      f"{slopes.get('device_cached', 0) / MiB:.1f} MiB/round; advice: {d.get('advice')}")
want, part = ("leak", "device_live") if how == "kept" else ("cuda_cache", "device_cached")
fail = []
if d.get("cause") != want:
    fail.append(f"cause {d.get('cause')}, expected {want}")
if not 0.9 * 64 * MiB <= slopes.get(part, 0) <= 1.1 * 64 * MiB:
    fail.append(f"{part} grows {slopes.get(part, 0) / MiB:.1f} MiB/round, the program 64")
for f in fail:
    print(f"FAIL [diagnosis {how}]: {f}")
print(f"[diagnosis {how}] {'FAIL' if fail else 'PASS'}")
sys.exit(1 if fail else 0)
EOF
    else
        echo "FAIL [diagnosis $how]: the run failed"
        tail -20 "$tmp/grow_$how.err"
        status=1
    fi
done

# 6. The stack users run.
cat >"$tmp/rt_any.py" <<'EOF'
import ctypes, json, os, sys, time


def round_end(n):
    """Marks round n when the library is preloaded and waits for its record (no torch needed)."""
    end = getattr(ctypes.CDLL(None), "roundtrim_round_end", None)
    if end is None:
        return None
    end()
    log = os.environ["ROUNDTRIM_LOG"]
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            rounds = [json.loads(l) for l in open(log) if '"event":"round"' in l]
        except FileNotFoundError:
            rounds = []
        rounds = [r for r in rounds if r.get("pid") == os.getpid()]
        if len(rounds) >= n:
            return rounds[n - 1]
        time.sleep(0.01)
    sys.exit(f"round {n} never reached the log")
EOF

cat >"$tmp/stack_jax.py" <<'EOF'
import json
import jax, jax.numpy as jnp
from rt_any import round_end

@jax.jit
def step(w, x):
    return w - 0.01 * jnp.tanh(x @ w).T @ x / x.shape[0]

w = jax.random.normal(jax.random.PRNGKey(0), (512, 512))
facts = []
for n in range(1, 5):
    x = jax.random.normal(jax.random.PRNGKey(n), (1024 * n, 512))
    for _ in range(5):
        w = step(w, x)
    w.block_until_ready()
    stats = jax.devices()[0].memory_stats() or {}
    rec = round_end(n)
    if rec:
        facts.append({"live": rec.get("cuda_live_bytes", 0),
                      "in_use": stats.get("bytes_in_use", 0),
                      "pool": stats.get("pool_bytes", stats.get("bytes_reserved", 0))})
print(json.dumps({"facts": facts}))
print(f"result {float(jnp.abs(w).sum()):.3f}")
EOF

cat >"$tmp/stack_cupy.py" <<'EOF'
import json
import cupy as cp
from rt_any import round_end

pool = cp.get_default_memory_pool()
facts, total = [], 0.0
for n in range(1, 5):
    a = cp.arange(32 << 20, dtype=cp.float32) * n  # 128 MiB, freed into the pool
    total += float(a.sum())
    del a
    cp.cuda.Device().synchronize()
    cached = pool.free_bytes()
    rec = round_end(n)
    if rec:
        facts.append({"cached": cached, "after": pool.free_bytes(),
                      "released": rec.get("cupy_released_bytes"),
                      "cleanup": rec.get("cleanup"),
                      "device_cached": rec.get("memory", {}).get("device_cached")})
print(json.dumps({"facts": facts}))
print(f"result {total:.6e}")
EOF

cat >"$tmp/stack_compile.py" <<'EOF'
import torch
torch.manual_seed(0)
block = torch.nn.TransformerEncoderLayer(d_model=256, nhead=8, dim_feedforward=1024,
                                         batch_first=True).cuda().eval()
compiled = torch.compile(block)
x = torch.randn(8, 64, 256, device="cuda")
with torch.no_grad():
    y = compiled(x)
    ref = block(x)
print(f"result close={torch.allclose(y, ref, atol=1e-3)} shape={tuple(y.shape)}")
EOF

cat >"$tmp/stack_numba.py" <<'EOF'
import numpy as np
from numba import cuda

@cuda.jit
def axpy(out, a, x, y):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]

x = np.arange(1 << 20, dtype=np.float32)
y = np.ones_like(x)
out = cuda.device_array_like(x)
axpy[(x.size + 255) // 256, 256](out, np.float32(2.0), cuda.to_device(x), cuda.to_device(y))
print(f"result {float(out.copy_to_host().sum()):.6e}")
EOF

cat >"$tmp/stack_loader.py" <<'EOF'
import torch
from torch.utils.data import DataLoader, TensorDataset
from rt_any import round_end

torch.manual_seed(0)
data = TensorDataset(torch.randn(4096, 64), torch.randint(0, 10, (4096,)))
model = torch.nn.Linear(64, 10).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for n in range(1, 4):
    loader = DataLoader(data, batch_size=256, num_workers=2, shuffle=False,
                        multiprocessing_context="fork")
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    round_end(n)
print(f"result {loss.item():.4f}")
EOF

cat >"$tmp/stack_facts.py" <<'EOF'
import json, sys
name, path = sys.argv[1], sys.argv[2]
MiB = 1 << 20
facts = [json.loads(l)["facts"] for l in open(path) if l.startswith('{"facts"')]
facts = facts[0] if facts else []
fail = []
for f in facts:
    if name.startswith("jax") and f["live"] < f["in_use"]:
        fail.append(f"cuda_live_bytes {f['live'] / MiB:.0f} MiB below JAX's {f['in_use'] / MiB:.0f}")
    if name == "cupy":
        if "cupy_free_blocks" not in (f["cleanup"] or []):
            fail.append(f"no cupy_free_blocks in {f['cleanup']}")
        elif abs((f["released"] or 0) - f["cached"]) > 64 * MiB or f["after"] != 0:
            fail.append(f"released {(f['released'] or 0) / MiB:.0f} MiB of {f['cached'] / MiB:.0f} "
                        f"cached, {f['after'] / MiB:.0f} left")
        if f["device_cached"] is not None and f["device_cached"] < f["cached"]:
            fail.append(f"device_cached {f['device_cached'] / MiB:.0f} MiB below CuPy's "
                        f"{f['cached'] / MiB:.0f}")
if name in ("cupy", "jax_prealloc", "jax_no_prealloc") and not facts:
    fail.append("no round records read")
for x in fail:
    print(f"FAIL [stack {name}]: {x}")
print(f"[stack {name}] {'FAIL' if fail else 'PASS'}: same result bare and preloaded; "
      f"facts {json.dumps(facts)[:300]}")
sys.exit(1 if fail else 0)
EOF

# Empty Inductor and Triton caches for one run (STACK_FRESH_CACHES=1): everything is compiled.
fresh_caches() {
    if [[ -n ${STACK_FRESH_CACHES:-} ]]; then
        TORCHINDUCTOR_CACHE_DIR=$(mktemp -d -p "$tmp") TRITON_CACHE_DIR=$(mktemp -d -p "$tmp") "$@"
    else
        "$@"
    fi
}

# name, then the command: the bare and the preloaded run must print the same "result" line, and
# the preloaded run's facts must hold. A stack whose bare run fails is not this check's to judge.
stack_check() {
    local name=$1
    shift
    if ! PYTHONPATH="$tmp" fresh_caches "$@" >"$tmp/$name.bare" 2>"$tmp/$name.bare.err"; then
        echo "SKIP [stack $name]: the bare run fails here: $(tail -1 "$tmp/$name.bare.err")"
        return 0
    fi
    if ! GC_ROUNDS=1 fresh_caches run_shimmed "$tmp/$name.jsonl" "$@" >"$tmp/$name.shim" \
        2>"$tmp/$name.shim.err"; then
        echo "FAIL [stack $name]: fails under the library (bare works): $(tail -3 "$tmp/$name.shim.err")"
        status=1
        return 0
    fi
    local want got
    want=$(grep '^result' "$tmp/$name.bare" | tail -1)
    got=$(grep '^result' "$tmp/$name.shim" | tail -1)
    if [[ $want != "$got" ]]; then
        echo "FAIL [stack $name]: bare '$want', under the library '$got'"
        status=1
        return 0
    fi
    "$PYTHON" "$tmp/stack_facts.py" "$name" "$tmp/$name.shim" || status=1
}

stack_check jax_prealloc "$PYTHON" "$tmp/stack_jax.py"
XLA_PYTHON_CLIENT_PREALLOCATE=false stack_check jax_no_prealloc "$PYTHON" "$tmp/stack_jax.py"
stack_check cupy "$PYTHON" "$tmp/stack_cupy.py"
STACK_FRESH_CACHES=1 stack_check compile_empty_cache "$PYTHON" "$tmp/stack_compile.py"
stack_check numba_cuda "$PYTHON" "$tmp/stack_numba.py"
stack_check dataloader "$PYTHON" "$tmp/stack_loader.py"

bare=$(PYTHONPATH="$tmp" "$PYTHON" "$tmp/pair_cost.py" 2>/dev/null | tail -1) || bare=""
shim=$(run_shimmed "$tmp/cost.jsonl" "$PYTHON" "$tmp/pair_cost.py" 2>/dev/null | tail -1) || shim=""
if [[ -n $bare && -n $shim ]]; then
    "$PYTHON" - "$bare" "$shim" <<'EOF'
import json, sys
bare, shim = (json.loads(a)["ns_per_pair"] for a in sys.argv[1:3])
print(f"[cost] cudaMalloc+cudaFree of 1 MiB (ctypes loop, median of 5 x 2000): bare {bare:.0f} ns, "
      f"under the library {shim:.0f} ns, added {shim - bare:.0f} ns ({(shim / bare - 1) * 100:+.1f}%)")
EOF
else
    echo "[cost] WARN: could not measure (libcudart not found in the PyTorch process)"
fi
exit $status
