/* Which Python files are library code for the frames a sampled site keeps: the interpreter's
 * standard library wherever it is installed, installed packages, frozen and generated code;
 * never a program's own files, even under a folder that merely mentions python or lib. */
#include <check.h>

#include "policy/code_origin.h"
#include "run_suite.h"

START_TEST(standard_library_and_installed_packages_are_library)
{
    const char *library[] = {
        "/usr/lib/python3.11/copy.py",
        "/root/.pyenv/versions/3.11.7/lib/python3.11/threading.py",
        "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py",
        "/usr/lib/python3/dist-packages/numpy/core/numeric.py",
        "/home/u/.local/lib/python3.12/site-packages/flwr/client/app.py",
        "/home/u/venv/lib64/python3.9/json/decoder.py",
        "/usr/local/lib/python313.zip/json/encoder.py",
        "/srv/deps/site-packages/pkg/mod.py",
        "<frozen importlib._bootstrap>",
        "<string>",
        "",
    };
    for (size_t i = 0; i < sizeof library / sizeof library[0]; i++)
        ck_assert_msg(roundtrim_python_file_is_library(library[i]), "%s", library[i]);
    ck_assert(roundtrim_python_file_is_library(NULL));
}
END_TEST

START_TEST(the_programs_own_files_are_not)
{
    const char *program[] = {
        "/work/fl/train.py",
        "train.py",
        "/home/u/python3-projects/client.py",
        "/srv/lib/python_tools/job.py",
        "/srv/mylib/python3.11/notes.py",
        "/srv/app/site-packages-notes/run.py",
        "/srv/app/lib/client.py",
    };
    for (size_t i = 0; i < sizeof program / sizeof program[0]; i++)
        ck_assert_msg(!roundtrim_python_file_is_library(program[i]), "%s", program[i]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("code_origin");
    TCase *tc = tcase_create("code_origin");
    tcase_add_test(tc, standard_library_and_installed_packages_are_library);
    tcase_add_test(tc, the_programs_own_files_are_not);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
