#!/bin/sh
# Real-GPU check of the CUDA hooks (issue 3): a PyTorch training loop under the preloaded shim.
#
#   tests/gpu/run.sh            (from the repository root; builds the library when missing)
#
# For each PyTorch allocator mode (native caching allocator, expandable segments) it checks that
#   - every round's cuda_live_bytes equals torch.cuda.memory_reserved() taken just before the round
#     end (every reserved segment is one cuMemAlloc_v2 or cuMemCreate), within GPU_TOLERANCE_MIB;
#   - cuda_alloc_bytes - cuda_free_bytes equals the change of cuda_live_bytes, round by round;
#   - a cleanup round with ROUNDTRIM_CUDA_EMPTY_CACHE=true lowers the driver's used memory
#     (torch.cuda.mem_get_info) when the cache held freed blocks.
# It prints the figures it compared. Without an NVIDIA GPU or PyTorch it prints SKIP and exits 0.
set -eu

cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python3}
LIB=${ROUNDTRIM_LIB:-$PWD/build/libroundtrim.so}

skip() {
    echo "SKIP: $*"
    exit 0
}

command -v nvidia-smi >/dev/null 2>&1 || skip "no nvidia-smi: this machine has no NVIDIA driver"
nvidia-smi -L >/dev/null 2>&1 || skip "nvidia-smi finds no GPU"
"$PYTHON" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
    skip "PyTorch with CUDA is not importable by $PYTHON (or sees no GPU)"
[ -f "$LIB" ] || make lib >/dev/null
[ -f "$LIB" ] || {
    echo "FAIL: $LIB was not built"
    exit 1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

cat >"$tmp/train.py" <<'EOF'
import ctypes, json, os, sys, time
import torch

LOG = os.environ["ROUNDTRIM_LOG"]
mark = ctypes.CDLL(None).roundtrim_round_end
MiB = 1 << 20


def records():
    try:
        with open(LOG) as f:
            return [json.loads(l) for l in f if l.strip()]
    except FileNotFoundError:
        return []


def round_end(n):
    """Marks round n and waits (running bytecode, so that pending calls run) for its record."""
    torch.cuda.synchronize()
    mark()
    deadline = time.time() + 60
    while time.time() < deadline:
        rounds = [r for r in records() if r.get("event") == "round"]
        if len(rounds) >= n:
            return rounds[n - 1]
        time.sleep(0.01)
    sys.exit(f"round {n} never reached the log")


def used_mem():
    free, total = torch.cuda.mem_get_info()
    return total - free


dev = torch.device("cuda")
model = torch.nn.Sequential(
    torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
out = []
for n in range(1, 7):
    batch = 256 * n  # every round needs more memory than the last
    for _ in range(5):
        x = torch.randn(batch, 1024, device=dev)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    del x, loss
    if n % 2 == 1:
        # Leave freed blocks in the cache before the next (even, cleanup) round.
        big = torch.empty(512 * MiB, dtype=torch.uint8, device=dev)
        del big
    reserved = torch.cuda.memory_reserved()
    used_before = used_mem()
    rec = round_end(n)
    torch.cuda.synchronize()
    used_after = used_mem()
    out.append({"round": n, "reserved": reserved, "used_before": used_before,
                "used_after": used_after, "record": rec})
print(json.dumps(out))
EOF

status=0
for mode in native expandable; do
    case $mode in
    native) conf="" ;;
    expandable) conf="expandable_segments:True" ;;
    esac
    log="$tmp/$mode.jsonl"
    if ! env LD_PRELOAD="$LIB" ROUNDTRIM_LOG="$log" ROUNDTRIM_GC_ROUNDS=2 \
        ROUNDTRIM_CUDA_EMPTY_CACHE=true PYTORCH_CUDA_ALLOC_CONF="$conf" \
        "$PYTHON" "$tmp/train.py" >"$tmp/$mode.out" 2>"$tmp/$mode.err"; then
        echo "FAIL [$mode]: the training run failed"
        tail -20 "$tmp/$mode.err"
        status=1
        continue
    fi
    "$PYTHON" - "$mode" "$tmp/$mode.out" "${GPU_TOLERANCE_MIB:-0}" <<'EOF' || status=1
import json, sys
mode, path, tol = sys.argv[1], sys.argv[2], int(sys.argv[3]) << 20
rows = json.loads(open(path).read().strip().splitlines()[-1])
MiB = 1 << 20
fail = []
prev_live = 0
print(f"[{mode}] round  reserved_MiB  live_MiB  alloc_MiB  free_MiB  cleanup            used_before->after_MiB")
for row in rows:
    r = row["record"]
    if "cuda_live_bytes" not in r:
        fail.append(f"round {row['round']}: no cuda_ keys in the record (driver calls not seen)")
        continue
    live, alloc, freed = r["cuda_live_bytes"], r["cuda_alloc_bytes"], r["cuda_free_bytes"]
    print(f"[{mode}] {row['round']:5d}  {row['reserved'] / MiB:12.1f}  {live / MiB:8.1f}  "
          f"{alloc / MiB:9.1f}  {freed / MiB:8.1f}  {','.join(r.get('cleanup', [])):17s}  "
          f"{row['used_before'] / MiB:.0f}->{row['used_after'] / MiB:.0f}")
    if abs(live - row["reserved"]) > tol:
        fail.append(f"round {row['round']}: cuda_live_bytes {live} != memory_reserved {row['reserved']}")
    if alloc - freed != live - prev_live:
        fail.append(f"round {row['round']}: alloc-free {alloc - freed} != live change {live - prev_live}")
    prev_live = live
    if "torch_empty_cache" in r.get("cleanup", []) or "cuda_pool_trim" in r.get("cleanup", []):
        if not row["used_after"] < row["used_before"]:
            fail.append(f"round {row['round']}: cleanup did not lower driver used memory "
                        f"({row['used_before']} -> {row['used_after']})")
if not any("torch_empty_cache" in r["record"].get("cleanup", []) for r in rows):
    fail.append("no round ran torch_empty_cache")
for f in fail:
    print(f"FAIL [{mode}]: {f}")
print(f"[{mode}] {'FAIL' if fail else 'PASS'}")
sys.exit(1 if fail else 0)
EOF
done
exit $status
