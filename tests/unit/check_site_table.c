/* The table of allocation sites (runtime/sites/site_table.c) and its table of code names, one
 * thread at a time: a stack gets one site and keeps it, stacks that differ in any frame get
 * different ones, the full table (every slot taken, through collisions) still finds every site
 * and refuses a new one, stacks past the stack sites share their line's site, the program's start
 * is one site, and the byte counts add up. A site is given back only when unpinned and all its
 * sampled bytes are freed; its entry then serves a new stack, the others are still found, and a
 * freed sample's ref to the old site counts nowhere. Each test runs in a process of its own
 * (Check's fork mode). */
#include <check.h>
#include <stdint.h>

#include "runtime/sites/site_table.h"
#include "run_suite.h"
#include "site_stacks.h"
#include "stubs_site_table.h"

static void setup(void)
{
    ck_assert(roundtrim_site_table_init());
}

START_TEST(intern_before_init_has_no_site)
{
    struct stack s;
    stack_make(&s, 5);
    ck_assert_int_eq(stack_intern(&s), -1);
    ck_assert_ptr_null(roundtrim_site_at(0));
    ck_assert_ptr_null(roundtrim_code_names_find((const void *)0x1000, 0));
}
END_TEST

START_TEST(a_stack_keeps_its_site)
{
    setup();
    struct stack s;
    stack_make(&s, 30); /* 7 native frames, 3 Python ones */
    int32_t i = stack_intern(&s);
    ck_assert_int_ge(i, 0);
    ck_assert_int_lt(i, ROUNDTRIM_SITES_MAX);
    ck_assert_int_eq(stack_intern(&s), i);
    const struct roundtrim_site *site = roundtrim_site_at((uint32_t)i);
    ck_assert_ptr_nonnull(site);
    ck_assert(site_is_stack(site, 30));
    ck_assert_uint_ne(site->id, 0);
}
END_TEST

/* Any frame, native or Python, code or line, or the depth alone, makes another site. */
START_TEST(stacks_that_differ_anywhere_have_their_own_sites)
{
    setup();
    struct stack base, s;
    stack_make(&base, 30);
    int32_t i = stack_intern(&base);
    s = base;
    s.frames[s.depth - 1]++;
    ck_assert_int_ne(stack_intern(&s), i);
    s = base;
    s.depth--;
    ck_assert_int_ne(stack_intern(&s), i);
    s = base;
    s.py[0].line++;
    ck_assert_int_ne(stack_intern(&s), i);
    s = base;
    s.py[0].names_key++;
    ck_assert_int_ne(stack_intern(&s), i);
    s = base;
    s.py[2].code = (const void *)0x42;
    ck_assert_int_ne(stack_intern(&s), i);
    s = base;
    s.py_depth = 0;
    int32_t native_only = stack_intern(&s);
    ck_assert_int_ne(native_only, i);
    ck_assert_int_eq(roundtrim_site_at((uint32_t)native_only)->py_depth, 0);
    ck_assert_int_eq(stack_intern(&base), i);
}
END_TEST

START_TEST(byte_counts_add_up)
{
    setup();
    struct stack s;
    stack_make(&s, 1);
    int32_t i = stack_intern(&s);
    roundtrim_site_add_alloc(i, 1000);
    roundtrim_site_add_alloc(i, 24);
    roundtrim_site_add_free((uint32_t)i, 500);
    roundtrim_site_add_free(ROUNDTRIM_SITES_MAX, 1); /* a freed sample of no site: ignored */
    const struct roundtrim_site *site = roundtrim_site_at((uint32_t)i);
    ck_assert_uint_eq(site->alloc_bytes, 1024);
    ck_assert_uint_eq(site->samples, 2);
    ck_assert_uint_eq(site->free_bytes, 500);
    ck_assert_ptr_null(roundtrim_site_at(ROUNDTRIM_SITES_MAX));
}
END_TEST

/* Every slot taken: each stack has a site of its own, found again past any number of
 * collisions, and the next new stack has none. */
START_TEST(full_table_finds_every_site_and_refuses_a_new_one)
{
    setup();
    static bool taken[ROUNDTRIM_SITES_MAX];
    int32_t index[ROUNDTRIM_SITES_MAX];
    struct stack s;
    for (uint32_t n = 0; n < ROUNDTRIM_SITES_MAX; n++) {
        stack_make(&s, n);
        index[n] = stack_intern(&s);
        ck_assert_int_ge(index[n], 0);
        ck_assert_msg(!taken[index[n]], "stack %u given the site of another", n);
        taken[index[n]] = true;
    }
    stack_make(&s, ROUNDTRIM_SITES_MAX);
    ck_assert_int_eq(stack_intern(&s), -1);
    for (uint32_t n = 0; n < ROUNDTRIM_SITES_MAX; n++) {
        stack_make(&s, n);
        ck_assert_int_eq(stack_intern(&s), index[n]);
        const struct roundtrim_site *site = roundtrim_site_at((uint32_t)index[n]);
        ck_assert_ptr_nonnull(site);
        ck_assert(site_is_stack(site, n));
    }
}
END_TEST

START_TEST(the_programs_start_is_one_site_without_frames)
{
    setup();
    int32_t i = roundtrim_site_start();
    ck_assert_int_ge(i, 0);
    ck_assert_int_eq(roundtrim_site_start(), i);
    const struct roundtrim_site *site = roundtrim_site_at((uint32_t)i);
    ck_assert_ptr_nonnull(site);
    ck_assert_int_eq(site->kind, RT_SITE_START);
    ck_assert_int_eq(site->depth, 0);
    ck_assert_int_eq(site->py_depth, 0);
}
END_TEST

/* Once the stack sites are all taken, a new stack is counted at its innermost Python line:
 * stacks that differ below the same line share it. */
START_TEST(stacks_past_a_full_table_share_their_lines_site)
{
    setup();
    struct stack s;
    for (uint32_t n = 0; n < ROUNDTRIM_SITES_MAIN; n++) {
        stack_make(&s, n);
        ck_assert_int_lt(stack_intern(&s), (int32_t)ROUNDTRIM_SITES_MAIN);
    }
    stack_make(&s, 100001); /* two Python frames: 100001 % 9 */
    ck_assert_int_gt(s.py_depth, 0);
    int32_t line = stack_intern(&s);
    ck_assert_int_ge(line, (int32_t)ROUNDTRIM_SITES_MAIN);
    ck_assert_int_eq(roundtrim_site_at((uint32_t)line)->kind, RT_SITE_LINE);
    s.frames[0]++; /* another native path to the same line */
    s.py[1].line++;
    ck_assert_int_eq(stack_intern(&s), line);
    s.py[0].line++; /* another line */
    ck_assert_int_ne(stack_intern(&s), line);
}
END_TEST

/* Fills every stack site; index[n] is stack n's. */
static void fill_stack_sites(int32_t *index)
{
    struct stack s;
    for (uint32_t n = 0; n < ROUNDTRIM_SITES_MAIN; n++) {
        stack_make(&s, n);
        index[n] = stack_intern(&s);
        ck_assert_int_lt(index[n], (int32_t)ROUNDTRIM_SITES_MAIN);
        roundtrim_site_unpin(index[n]);
    }
}

START_TEST(a_site_whose_samples_are_freed_gives_its_entry_to_a_new_stack)
{
    setup();
    static int32_t index[ROUNDTRIM_SITES_MAIN];
    fill_stack_sites(index);
    uint32_t gone = (uint32_t)index[77];
    uint32_t ref = roundtrim_site_ref((int32_t)gone);
    roundtrim_site_add_alloc((int32_t)gone, 300);
    roundtrim_site_add_free(ref, 300);
    ck_assert_uint_eq(roundtrim_site_stacks_taken(), ROUNDTRIM_SITES_MAIN);
    ck_assert(roundtrim_site_give_back(gone));
    ck_assert_ptr_null(roundtrim_site_at(gone));
    ck_assert_uint_eq(roundtrim_site_stacks_taken(), ROUNDTRIM_SITES_MAIN - 1);
    ck_assert_int_eq(roundtrim_site_of_ref(ref), -1);
    /* A new stack takes the entry, not a line site; it starts from nothing. */
    struct stack s;
    stack_make(&s, 100000);
    ck_assert_int_eq(stack_intern(&s), (int32_t)gone);
    const struct roundtrim_site *site = roundtrim_site_at(gone);
    ck_assert(site_is_stack(site, 100000));
    ck_assert_uint_eq(site->alloc_bytes, 0);
    ck_assert_uint_eq(site->free_bytes, 0);
    ck_assert_uint_eq(site->samples, 0);
    /* A freed sample of the old site is not counted at the new one. */
    roundtrim_site_add_free(ref, 300);
    ck_assert_uint_eq(site->free_bytes, 0);
    ck_assert_int_eq(roundtrim_site_of_ref(roundtrim_site_ref((int32_t)gone)), (int32_t)gone);
    /* Every other stack is still found where it was, past the entry given back. */
    for (uint32_t n = 0; n < ROUNDTRIM_SITES_MAIN; n++) {
        if (n == 77)
            continue;
        stack_make(&s, n);
        ck_assert_int_eq(stack_intern(&s), index[n]);
    }
    /* The stack given back gets an entry again when seen again (a line site: the table is full
     * once more). */
    stack_make(&s, 77);
    int32_t again = stack_intern(&s);
    ck_assert_int_ge(again, (int32_t)ROUNDTRIM_SITES_MAIN);
}
END_TEST

START_TEST(a_pinned_site_or_one_holding_live_bytes_is_kept)
{
    setup();
    struct stack s;
    stack_make(&s, 5);
    int32_t i = stack_intern(&s); /* pinned until the sample is counted */
    ck_assert(!roundtrim_site_give_back((uint32_t)i));
    roundtrim_site_add_alloc(i, 4096);
    roundtrim_site_unpin(i);
    ck_assert(!roundtrim_site_give_back((uint32_t)i)); /* the sample is live */
    ck_assert_int_eq(stack_intern(&s), i);             /* still found */
    roundtrim_site_unpin(i);
    roundtrim_site_add_free(roundtrim_site_ref(i), 4096);
    ck_assert(roundtrim_site_give_back((uint32_t)i));
    ck_assert(!roundtrim_site_give_back((uint32_t)i)); /* once */
    int32_t start = roundtrim_site_start();
    ck_assert(!roundtrim_site_give_back((uint32_t)start));
    ck_assert_ptr_nonnull(roundtrim_site_at((uint32_t)start));
}
END_TEST

START_TEST(code_names_are_noted_once)
{
    setup();
    const void *code = (const void *)0x7f0000001000;
    ck_assert_ptr_null(roundtrim_code_names_find(code, 7));
    roundtrim_code_names_note(code, 7);
    stub_code_generation = 1; /* a second note reads nothing more */
    roundtrim_code_names_note(code, 7);
    roundtrim_code_names_note(NULL, 7);
    const struct roundtrim_code_names *c = roundtrim_code_names_find(code, 7);
    ck_assert_ptr_nonnull(c);
    ck_assert_str_eq(c->file, "file_7f0000001000.py");
    ck_assert_str_eq(c->function, "func_7f0000001000");
    ck_assert_ptr_null(roundtrim_code_names_find((const void *)0x7f0000002000, 7));
    ck_assert_ptr_null(roundtrim_code_names_find(NULL, 7));
}
END_TEST

/* A code object freed and another created at its address: the names key tells them apart, and
 * each keeps its own names. */
START_TEST(a_code_object_at_a_freed_ones_address_has_its_own_names)
{
    setup();
    const void *code = (const void *)0x7f0000003000;
    roundtrim_code_names_note(code, 1);
    stub_code_generation = 1;
    ck_assert_ptr_null(roundtrim_code_names_find(code, 2));
    roundtrim_code_names_note(code, 2);
    const struct roundtrim_code_names *first = roundtrim_code_names_find(code, 1);
    const struct roundtrim_code_names *second = roundtrim_code_names_find(code, 2);
    ck_assert_ptr_nonnull(first);
    ck_assert_ptr_nonnull(second);
    ck_assert_str_eq(first->function, "func_7f0000003000");
    ck_assert_str_eq(second->function, "func_7f0000003000_1");
}
END_TEST

START_TEST(unreadable_code_names_are_not_found)
{
    setup();
    stub_unreadable_code = (const void *)0x5000;
    roundtrim_code_names_note(stub_unreadable_code, 0);
    ck_assert_ptr_null(roundtrim_code_names_find(stub_unreadable_code, 0));
    roundtrim_code_names_note((const void *)0x6000, 0);
    ck_assert_ptr_nonnull(roundtrim_code_names_find((const void *)0x6000, 0));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("site_table");
    TCase *tc = tcase_create("site_table");
    tcase_add_test(tc, intern_before_init_has_no_site);
    tcase_add_test(tc, a_stack_keeps_its_site);
    tcase_add_test(tc, stacks_that_differ_anywhere_have_their_own_sites);
    tcase_add_test(tc, byte_counts_add_up);
    tcase_add_test(tc, full_table_finds_every_site_and_refuses_a_new_one);
    tcase_add_test(tc, the_programs_start_is_one_site_without_frames);
    tcase_add_test(tc, stacks_past_a_full_table_share_their_lines_site);
    tcase_add_test(tc, a_site_whose_samples_are_freed_gives_its_entry_to_a_new_stack);
    tcase_add_test(tc, a_pinned_site_or_one_holding_live_bytes_is_kept);
    tcase_add_test(tc, code_names_are_noted_once);
    tcase_add_test(tc, a_code_object_at_a_freed_ones_address_has_its_own_names);
    tcase_add_test(tc, unreadable_code_names_are_not_found);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
