"""Section 4 of make bench: cleanup cost against heap size and threads, and the longest malloc
stall meanwhile."""

import os
import time

from bench_common import (  # noqa: E402
    MIB,
    allocator_env,
    fmt,
    have_jemalloc,
    json_lines,
    md_table,
    median,
    plural,
    prog,
    read_first,
    run)


def cleanup_once(mode, heap_mib, threads, tmpdir, allocator="glibc"):
    argv = [prog("bench_cleanup"), "--mode", "round" if mode.startswith("round") else mode,
            "--heap-mib", heap_mib, "--threads", threads]
    env = {}
    if mode.startswith("round"):
        log = os.path.join(tmpdir, "cleanup.jsonl")
        if os.path.exists(log):
            os.unlink(log)
        env = allocator_env(allocator, True, {"ROUNDTRIM_LOG": log})
    elif allocator == "jemalloc":
        env = allocator_env(allocator, False)
    t0 = time.monotonic()
    res = json_lines(run("cleanup", argv, env, timeout=900).stdout)[0]
    res["run_s"] = time.monotonic() - t0
    res["variant"] = mode
    # The cleanup itself: malloc_trim's duration, or the trim/purge time of roundtrim's record.
    res["cleanup_ms"] = (res["record_us"] if res["record_us"] >= 0 else res["cleanup_us"]) / 1000
    res["wall_ms"] = res["cleanup_us"] / 1000
    res["one_arena_ms"] = (res["cleanup_ms"] * res["arena_free_max_bytes"] / res["free_bytes"]
                           if res["free_bytes"] else float("nan"))
    return res


def section_cleanup(cfg, tmpdir):
    modes = ["trim", "round"]
    avail_mib = 0
    for line in read_first("/proc/meminfo").splitlines():
        if line.startswith("MemAvailable:"):
            avail_mib = int(line.split()[1]) // 1024
    limit_mib = min(cfg["cleanup_max_mib"], avail_mib // 3)
    budget_end = time.monotonic() + cfg["cleanup_budget_s"]
    by_size, sizes = [], []
    size, spent_per_mib = cfg["cleanup_sizes"][0], 0.0
    # Sizes double while the machine has the memory and the projected time fits the budget.
    while size <= limit_mib:
        projected = spent_per_mib * size * len(modes) * cfg["cleanup_reps"]
        if sizes and time.monotonic() + projected > budget_end - cfg["cleanup_thread_budget_s"]:
            break
        t0 = time.monotonic()
        runs = []
        for rep in range(cfg["cleanup_reps"]):
            for mode in (modes if rep % 2 == 0 else modes[::-1]):
                runs.append(cleanup_once(mode, size, cfg["cleanup_threads"], tmpdir))
        by_size += runs
        sizes.append(size)
        spent_per_mib = (time.monotonic() - t0) / size / len(modes) / cfg["cleanup_reps"]
        size *= 4 if size < cfg["cleanup_sizes"][-1] else 2
    by_threads = []
    for rep in range(cfg["cleanup_reps"]):
        for threads in cfg["cleanup_thread_counts"]:
            for mode in (modes if rep % 2 == 0 else modes[::-1]):
                by_threads.append(cleanup_once(mode, cfg["cleanup_thread_mib"], threads, tmpdir))
    jemalloc = []
    if have_jemalloc():
        for rep in range(cfg["cleanup_reps"]):
            jemalloc.append(cleanup_once("round (jemalloc purge)", cfg["cleanup_thread_mib"],
                                         cfg["cleanup_threads"], tmpdir, "jemalloc"))
    return {"sizes": sizes, "limit_mib": limit_mib, "by_size": by_size, "by_threads": by_threads,
            "jemalloc": jemalloc, "threads": cfg["cleanup_threads"],
            "thread_mib": cfg["cleanup_thread_mib"], "reps": cfg["cleanup_reps"]}


def plot_cleanup(result, fig_dir):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for mode, marker in (("trim", "o"), ("round", "s")):
        rows = [r for r in result["by_size"] if r["variant"] == mode]
        sizes = sorted({r["heap_mib"] for r in rows})
        label = {"trim": "malloc_trim(0) on the program's thread",
                 "round": "roundtrim round (worker thread)"}[mode]
        axes[0].plot(sizes, [median([r["cleanup_ms"] for r in rows if r["heap_mib"] == s])
                             for s in sizes], marker=marker, label=label + ": cleanup")
        axes[0].plot(sizes, [max([r["blocked_cleanup_us"] / 1000 for r in rows
                                  if r["heap_mib"] == s]) for s in sizes],
                     marker=marker, linestyle=":", label=label + ": longest malloc block")
    axes[0].set_xscale("log", base=2)
    axes[0].set_yscale("log")
    axes[0].set_xlabel("heap MiB (a quarter of it live)")
    axes[0].set_ylabel("ms")
    axes[0].set_title(f"against heap size ({result['threads']} threads)")
    axes[0].legend(fontsize=7)
    axes[0].grid(alpha=0.3)
    for mode, marker in (("trim", "o"), ("round", "s")):
        rows = [r for r in result["by_threads"] if r["variant"] == mode]
        ts = sorted({r["threads"] for r in rows})
        axes[1].plot(ts, [median([r["cleanup_ms"] for r in rows if r["threads"] == t]) for t in ts],
                     marker=marker, label=f"{mode}: cleanup")
        axes[1].plot(ts, [max([r["blocked_cleanup_us"] / 1000 for r in rows
                               if r["threads"] == t]) for t in ts],
                     marker=marker, linestyle=":", label=f"{mode}: longest malloc block")
    axes[1].set_xlabel("threads")
    axes[1].set_ylabel("ms")
    axes[1].set_title(f"against threads ({result['thread_mib']} MiB heap)")
    axes[1].legend(fontsize=7)
    axes[1].grid(alpha=0.3)
    fig.tight_layout()
    path = os.path.join(fig_dir, "cleanup-cost.png")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def section_md_cleanup(res, fig):
    out = ["## 4. Cleanup cost and stalls", ""]
    if "skipped" in res:
        return out + [f"Not run: {res['skipped']}.", ""]
    out.append(
        "`tests/bench/bench_cleanup.c`: T threads build a heap of the given size in 512 B-64 KiB "
        "blocks (touched), keep one block in four and free the rest, so three quarters of the "
        "heap lies free in holes between live blocks. The threads then probe: every 100 µs each "
        "times one `malloc` and one `free` of 2-32 KiB (above glibc's tcache, so the call needs "
        "its arena's lock). After a quiet window (the machine's own noise: 'quiet stall'), "
        "the cleanup runs: **trim** = `malloc_trim(0)` on the program's main thread (what "
        "NVFlare's cleanup does); **round** = `roundtrim_round_end()` with the shim preloaded "
        "(defaults: glibc arenas capped at 2), the time being the `trim_us` of its record "
        "(wall = from the call until the record is in the log, which also includes the "
        "worker's `mallinfo2` and RSS reads). 'one arena' = the cleanup time × the largest "
        "free share of one arena (from `malloc_info`): an estimate of the trim of one arena, "
        "the most a probe should wait. 'longest stall' = the longest `malloc` or `free` of any probe "
        "during the cleanup (worst of the runs); 'longest block' = the same less the time the "
        "probe spent runnable but waiting for a CPU (`/proc/thread-self/schedstat`): on a "
        "loaded 2-core machine a thread released by the lock may wait for a CPU, which is the "
        "machine's doing, not the cleanup's.")
    out.append("")
    if res["sizes"] and res["sizes"][-1] < 4096:
        out.append(
            f"Sizes stop at {res['sizes'][-1]} MiB: the next size did not fit the time budget "
            f"of this section on this machine (or a third of its available memory, "
            f"{res['limit_mib']} MiB).")
        out.append("")

    def table(runs, key):
        groups = {}
        for r in runs:
            groups.setdefault((r[key], r["variant"]), []).append(r)
        rows = []
        for (k, variant), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
            rows.append([k, variant, len(rs), fmt(median([r["cleanup_ms"] for r in rs])),
                         fmt(median([r["wall_ms"] for r in rs])),
                         fmt(median([r["rss_before"] / MIB for r in rs])),
                         fmt(median([r["rss_after"] / MIB for r in rs])),
                         median([r["arenas"] for r in rs]),
                         fmt(median([r["one_arena_ms"] for r in rs])),
                         fmt(max(r["blocked_cleanup_us"] for r in rs) / 1000, 2),
                         fmt(max(r["stall_cleanup_us"] for r in rs) / 1000, 2),
                         fmt(max(r["blocked_quiet_us"] for r in rs) / 1000, 2)])
        return md_table([key.replace("_", " "), "variant", "runs", "cleanup ms", "wall ms",
                         "RSS before MiB", "RSS after MiB", "arenas", "one arena ms",
                         "longest block ms", "longest stall ms", "quiet block ms"], rows)

    out += [f"### Against heap size ({res['threads']} threads)", "", table(res["by_size"],
                                                                           "heap_mib"), ""]
    out += [f"### Against threads ({res['thread_mib']} MiB heap)", "",
            table(res["by_threads"], "threads"), ""]
    trims = [r for r in res["by_size"] if r["variant"] == "trim" and r["free_bytes"]]
    rounds_ = [r for r in res["by_size"] + res["by_threads"] if r["variant"] == "round"]
    trims_all = [r for r in res["by_size"] + res["by_threads"] if r["variant"] == "trim"]
    if trims and rounds_ and trims_all:
        per_mib = median([r["cleanup_ms"] / (r["free_bytes"] / MIB) for r in trims])
        worst_round = max(rounds_, key=lambda r: r["blocked_cleanup_us"])
        worst_trim = max(trims_all, key=lambda r: r["blocked_cleanup_us"])
        out += ["Reading these figures: `malloc_trim(0)` cost a median "
                f"{per_mib:.2f} ms per MiB of free heap on this machine (see the memory speed "
                "probe above). The longest a malloc was blocked during a roundtrim round was "
                f"{worst_round['blocked_cleanup_us'] / 1000:,.1f} ms "
                f"({worst_round['heap_mib']} MiB, {plural(worst_round['threads'], 'thread')}), and during a "
                f"program's own `malloc_trim(0)` {worst_trim['blocked_cleanup_us'] / 1000:,.1f} ms "
                f"({worst_trim['heap_mib']} MiB, {plural(worst_trim['threads'], 'thread')}). A probe waits "
                "for the trim of the arena it needs, so the stall follows the largest arena: "
                "with fewer arenas (roundtrim caps them at 2 by default) each holds more of the "
                "heap and its trim takes longer.", ""]
    if res["jemalloc"]:
        out += [f"### jemalloc (`LD_PRELOAD=\"libroundtrim.so libjemalloc.so.2\"`, purge of all "
                f"arenas; {res['thread_mib']} MiB, {res['threads']} threads)", "",
                table(res["jemalloc"], "heap_mib"), ""]
    if fig:
        out += ["![cleanup cost](" + fig + ")", ""]
    return out
