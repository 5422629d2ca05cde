"""Section 2 of make bench: the CUDA interposition's cost per cuMemAlloc/cuMemFree pair against
the stand-in driver."""

import os
import re
import shutil

from bench_common import (  # noqa: E402
    FAKECUDA_DIR,
    LIB,
    callgrind_run,
    callgrind_total,
    fmt,
    md_table,
    median,
    pct,
    prog,
    run,
    short_path)


def section_cuda(cfg, tmpdir):
    bench, driver = prog("cuda_bench"), os.path.join(FAKECUDA_DIR, "libcuda.so.1")
    if not (os.path.exists(bench) and os.path.exists(driver)):
        return {"skipped": f"{short_path(bench)} or {short_path(driver)} is not built"}
    base = {"LD_LIBRARY_PATH": FAKECUDA_DIR}
    variants = [("bare", dict(base)), ("shim", dict(base, LD_PRELOAD=LIB))]
    ns = {"bare": [], "shim": []}
    for rep in range(cfg["cuda_reps"]):
        for name, env in (variants if rep % 2 == 0 else variants[::-1]):
            out = run("cuda", [bench, cfg["cuda_pairs"]], env).stdout
            m = re.search(r"ns_per_pair=([\d.]+) preloaded=(\d)", out)
            if not m or int(m.group(2)) != (name == "shim"):
                raise RuntimeError(f"unexpected cuda_bench output: {out!r}")
            ns[name].append(float(m.group(1)))
    ratios = [s / b for s, b in zip(ns["shim"], ns["bare"])]
    result = {"pairs": cfg["cuda_pairs"], "reps": cfg["cuda_reps"], "bare_ns": median(ns["bare"]),
              "shim_ns": median(ns["shim"]), "ratio": median(ratios),
              "delta_ns": median([s - b for s, b in zip(ns["shim"], ns["bare"])])}
    if shutil.which("valgrind"):
        n1, n2 = cfg["cuda_cg_pairs"]
        ir = {}
        for name, env in variants:
            f1 = callgrind_run("cuda", [bench, n1], env, tmpdir, f"cuda.{name}.{n1}")
            f2 = callgrind_run("cuda", [bench, n2], env, tmpdir, f"cuda.{name}.{n2}")
            ir[name] = (callgrind_total(f2) - callgrind_total(f1)) / (n2 - n1)
        result.update(bare_ir=ir["bare"], shim_ir=ir["shim"])
    return result


def section_md_cuda(res):
    out = ["## 2. CUDA interposition cost", ""]
    if "skipped" in res:
        return out + [f"Not run: {res['skipped']}.", ""]
    out.append(
        "`tests/programs/cuda_bench.c` against the stand-in driver `build/fakecuda/libcuda.so.1` "
        "(entry points found through `cuGetProcAddress_v2`, as libcudart does): "
        f"{res['pairs']:,} cuMemAlloc_v2 + cuMemFree_v2 pairs, {res['reps']} interleaved "
        "repetitions, medians.")
    out.append("")
    rows = [["wall ns per pair", fmt(res["bare_ns"]), fmt(res["shim_ns"]),
             f"{fmt(res['delta_ns'])} ns ({pct(res['ratio'])})"]]
    if "bare_ir" in res:
        rows.append(["instructions per pair (callgrind)", fmt(res["bare_ir"]),
                     fmt(res["shim_ir"]), fmt(res["shim_ir"] - res["bare_ir"])])
    out.append(md_table(["", "bare", "shim", "added"], rows))
    out += ["", "A real driver call costs microseconds; the shim's share is what is added here.",
            ""]
    return out
