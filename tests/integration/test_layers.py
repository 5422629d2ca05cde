"""make layers: scripts/tools/check-layers on small trees of the test's own, and on the project."""
import subprocess

from conftest import PYTHON, ROOT as REPO

CHECK = REPO / "scripts" / "tools" / "check-layers"


def tree(tmp_path, files):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def check(root, *layers, files=False):
    args = [PYTHON, str(CHECK)] + (["--files"] if files else []) + list(layers)
    return subprocess.run(args, cwd=root, capture_output=True, text=True, timeout=60)


def test_the_projects_includes_keep_its_layers():
    layers = subprocess.run(["make", "-s", "-C", str(REPO), "--no-print-directory", "print-layers"],
                            capture_output=True, text=True, check=True).stdout.split()
    assert "runtime/core" in layers and layers[0] == "policy" and layers[-1] == "shim"
    res = check(REPO, *layers)
    assert res.returncode == 0, res.stderr


def test_downward_and_same_folder_includes_pass(tmp_path):
    root = tree(tmp_path, {
        "low/a.h": "int a(void);\n",
        "low/b.c": '#include "low/a.h"\n',
        "high/c.c": '#include "low/a.h"\n#include "high/d.h"\n#include <stdio.h>\n',
        "high/d.h": "int d(void);\n",
    })
    res = check(root, "low", "high")
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""


def test_an_upward_include_fails_and_names_the_file_and_the_loop(tmp_path):
    root = tree(tmp_path, {
        "low/a.h": '#include "high/d.h"\n',
        "high/d.h": '#include "low/a.h"\n',
    })
    res = check(root, "low", "high")
    assert res.returncode == 1
    assert "low/a.h: includes high/d.h: high/ is above low/" in res.stderr
    assert "folder cycle: low -> high -> low" in res.stderr


def test_an_include_of_a_folder_in_no_layer_fails(tmp_path):
    root = tree(tmp_path, {"low/a.c": '#include "tests/helper.h"\n', "tests/helper.h": ""})
    res = check(root, "low")
    assert res.returncode == 1
    assert "low/a.c: includes tests/helper.h, which is in no layer" in res.stderr


def test_module_cycles_inside_a_folder_are_reported_not_failed(tmp_path):
    root = tree(tmp_path, {
        "one/x.c": '#include "one/y.h"\n', "one/x.h": "",
        "one/y.c": '#include "one/x.h"\n', "one/y.h": "",
    })
    assert check(root, "one").returncode == 0
    res = check(root, "one", files=True)
    assert res.returncode == 0
    assert "module cycle (2 modules): one/x one/y" in res.stdout
