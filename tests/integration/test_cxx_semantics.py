"""C++ allocation keeps its semantics under the preload, whoever loads the C++ runtime and when.

A Python program that imports a C++ extension gets libstdc++ by dlopen, in the extension's own
scope: the extension's calls to operator new reach roundtrim's, which must find libstdc++'s own
definition there. LLVM (numba, JAX, Triton) asks aligned new for alignments of 1, 2 and 4 and
trusts the throwing forms never to return NULL. Each library reaches the operator new it would
use bare: a libc++ library libc++abi's, a plugin the allocator its host opened RTLD_GLOBAL."""

import os

import pytest

from conftest import BUILD, prog

SEMANTICS_LIB = BUILD / "tests" / "libcxx_semantics.so"
SEMANTICS_LIBCXX = BUILD / "tests" / "libcxx_semantics_libcxx.so"  # the same checks on libc++
POOL = BUILD / "tests" / "libcxx_pool_new.so"
PLUGINS = {
    "no_runtime": BUILD / "tests" / "libcxx_plugin_new_bare.so",
    "libstdc++": BUILD / "tests" / "libcxx_plugin_new.so",
}
JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"

SETTINGS = {
    "defaults": {},
    "disabled": {"ROUNDTRIM_DISABLE": "true"},
    "sites_every_4k": {"ROUNDTRIM_SITES": "true", "ROUNDTRIM_SITES_SAMPLE": "4096"},
}


def argv(loading):
    if loading == "late":
        return [prog("cxx_semantics"), SEMANTICS_LIB]
    return [prog("cxx_semantics_linked")]


def assert_semantics(result):
    assert result.returncode == 0, result.stderr
    got = result.stdout_json()[0]
    assert got["aligned_ok"] == got["aligned_total"] == 52  # 4 forms x alignments 1..4096
    assert got["bad_alloc"] == got["throwing_total"] == 4  # never NULL from a throwing form
    assert got["handler_called"] == 4  # the new handler ran once before each throw
    assert got["nothrow_null"] == got["nothrow_total"] == 4
    return got


@pytest.mark.parametrize("setting", sorted(SETTINGS))
@pytest.mark.parametrize("loading", ["late", "linked"])
def test_every_form_keeps_cxx_semantics(run_shim, loading, setting):
    bare = run_shim(argv(loading), preload=False, log=False)
    assert_semantics(bare)
    assert_semantics(run_shim(argv(loading), env=SETTINGS[setting]))


@pytest.mark.parametrize("loading", ["late", "linked"])
def test_cxx_blocks_are_counted_exactly_whoever_loaded_the_runtime(run_shim, loading):
    res = run_shim(argv(loading) + ["--count"])
    got = assert_semantics(res)
    assert got["counted"] is True, res.stderr
    record = res.rounds[1]
    for key in ("malloc_calls", "free_calls", "malloc_bytes", "free_bytes"):
        assert record[key] == got[key], key


def test_a_preloaded_allocators_operator_new_keeps_the_semantics(run_shim):
    if not os.path.exists(JEMALLOC):
        pytest.skip("libjemalloc2 is not installed")
    res = run_shim(argv("late") + ["--count"], env={"LD_PRELOAD": f"{BUILD}/libroundtrim.so {JEMALLOC}"})
    got = assert_semantics(res)
    record = res.rounds[1]
    assert (record["malloc_calls"], record["free_calls"]) == (got["malloc_calls"], got["free_calls"])


def test_operator_new_before_any_cxx_runtime_and_after_a_private_one_arrives(run_shim):
    """Before libstdc++ is loaded, roundtrim's own forms follow the standard (any power-of-two
    alignment, nothrow gives NULL); once it is opened with RTLD_LOCAL, its operator new (which
    calls the new handler set in it) is reached: a lookup that found nothing was not final."""
    res = run_shim([prog("cxx_no_runtime")])
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["before: aligned=13/13 nothrow_null=1", "after: handler=1"]


@pytest.mark.parametrize("order", ["alone", "after_libstdc++", "before_libstdc++"])
def test_a_libcxx_library_gets_its_own_runtimes_semantics(run_shim, order):
    """libc++ keeps operator new, the new handler and std::bad_alloc in libc++abi.so.1. A libc++
    library opened RTLD_LOCAL that asks for 2^62 bytes catches bad_alloc after its handler ran,
    alone (it aborted: no runtime found) and beside a libstdc++ library opened before or after it
    (libstdc++'s bad_alloc reached libc++ code: std::terminate)."""
    if not SEMANTICS_LIBCXX.exists():
        pytest.skip("libc++1 and libc++abi1 are not installed: no libc++ test library was built")
    libs = {
        "alone": [SEMANTICS_LIBCXX],
        "after_libstdc++": [SEMANTICS_LIB, SEMANTICS_LIBCXX],
        "before_libstdc++": [SEMANTICS_LIBCXX, SEMANTICS_LIB],
    }[order]
    for preload in (False, True):
        res = run_shim([prog("cxx_semantics")] + libs, preload=preload, log=preload)
        assert res.returncode == 0, (preload, res.stderr)
        lines = res.stdout_json()
        assert len(lines) == len(libs), res.stdout
        for got in lines:
            assert got["bad_alloc"] == got["handler_called"] == 4
            assert got["aligned_ok"] == 52 and got["nothrow_null"] == 4


@pytest.mark.parametrize("plugin", sorted(PLUGINS))
def test_an_allocator_opened_rtld_global_serves_its_plugins_after_its_handle_closes(
    run_shim, plugin
):
    """A host opens an allocator that supplies operator new with RTLD_GLOBAL, then a plugin, and
    closes its own handle of the allocator: bare, the plugin's binding keeps the allocator loaded
    and it serves the plugin's new, until the plugin is closed (for good where libstdc++ came with
    the plugin: libstdc++'s own references bound to the allocator, and it never unloads).
    Preloaded, a plugin with no C++ runtime of its own died in its next new (the allocator
    unmapped under roundtrim's stored pointer: SIGSEGV), and a libstdc++ plugin was served by
    libstdc++ instead."""
    argv = [prog("cxx_global_allocator"), POOL, PLUGINS[plugin]]
    bare = run_shim(argv, preload=False, log=False)
    assert bare.returncode == 0, bare.stderr
    kept = 1 if plugin == "libstdc++" else 0
    assert bare.stdout.splitlines() == [
        "served=1/1 values=7,7",
        f"allocator_loaded_after_plugin={kept}",
    ]
    res = run_shim(argv)
    assert res.returncode == 0, res.stderr
    assert res.stdout == bare.stdout


@pytest.mark.parametrize("runtime", ["libstdc++", "libc++"])
def test_an_allocator_overriding_plain_new_leaves_the_other_forms_to_each_runtime(
    run_shim, runtime
):
    """With an allocator opened RTLD_GLOBAL that defines only plain new and delete, a library
    opened after it binds those to the allocator and every other form (aligned, nothrow) and the
    new handler to its own runtime, each name on its own. The checks then give the same figures
    as bare (the allocator's new returns NULL instead of throwing: 2 of the 4 throwing forms).
    Preloaded, the other forms found nothing in the global scope and aborted ('no C++ runtime is
    loaded')."""
    lib = SEMANTICS_LIB if runtime == "libstdc++" else SEMANTICS_LIBCXX
    if not lib.exists():
        pytest.skip("libc++1 and libc++abi1 are not installed: no libc++ test library was built")
    argv = [prog("cxx_semantics"), "--global", POOL, lib]
    bare = run_shim(argv, preload=False, log=False)
    assert bare.returncode == 0, bare.stderr
    assert bare.stdout_json()[0]["bad_alloc"] == 2
    res = run_shim(argv)
    assert res.returncode == 0, res.stderr
    assert res.stdout == bare.stdout
