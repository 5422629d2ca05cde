/* Aligned operator new where no C++ runtime serves it: every power-of-two alignment C++ allows
 * becomes one posix_memalign accepts and that meets it; anything else fails. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "policy/cxx_new.h"
#include "run_suite.h"

START_TEST(every_power_of_two_becomes_one_posix_memalign_takes_and_that_meets_it)
{
    for (size_t a = 1; a <= ((size_t)1 << 20); a <<= 1) {
        size_t use = roundtrim_cxx_memalign_alignment(a);
        ck_assert_uint_ge(use, a);                  /* meets the request */
        ck_assert_uint_eq(use % sizeof(void *), 0); /* posix_memalign's rule */
        ck_assert_uint_eq(use & (use - 1), 0);      /* a power of two */
        void *p = NULL;
        ck_assert_int_eq(posix_memalign(&p, use, 24), 0);
        ck_assert_uint_eq((uintptr_t)p % a, 0);
        free(p);
    }
    ck_assert_uint_eq(roundtrim_cxx_memalign_alignment(1), sizeof(void *));
    ck_assert_uint_eq(roundtrim_cxx_memalign_alignment(4096), 4096);
}
END_TEST

START_TEST(alignments_that_are_not_powers_of_two_fail)
{
    const size_t bad[] = {0, 3, 6, 12, 24, 48, 100, 4095, (size_t)-1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_uint_eq(roundtrim_cxx_memalign_alignment(bad[i]), 0);
}
END_TEST

START_TEST(a_zero_byte_request_still_gets_a_block)
{
    ck_assert_uint_eq(roundtrim_cxx_request_bytes(0), 1);
    ck_assert_uint_eq(roundtrim_cxx_request_bytes(40), 40);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cxx_new");
    TCase *tc = tcase_create("rules");
    tcase_add_test(tc, every_power_of_two_becomes_one_posix_memalign_takes_and_that_meets_it);
    tcase_add_test(tc, alignments_that_are_not_powers_of_two_fail);
    tcase_add_test(tc, a_zero_byte_request_still_gets_a_block);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
