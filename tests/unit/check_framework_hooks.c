/* The framework hook table: which function a framework version is hooked at, and the version
 * rules a new framework release relies on. */
#include <check.h>
#include <string.h>

#include "policy/framework_hooks.h"
#include "run_suite.h"

START_TEST(versions_compare_part_by_part)
{
    ck_assert_int_gt(roundtrim_version_compare("2.10", "2.9"), 0);
    ck_assert_int_eq(roundtrim_version_compare("2.9.0dev0", "2.9"), 0);
    ck_assert_int_lt(roundtrim_version_compare("2.8.1", "2.9"), 0);
    ck_assert_int_gt(roundtrim_version_compare("2.9.1", "2.9"), 0);
    ck_assert_int_eq(roundtrim_version_compare("1.28.0", "1.28"), 0);
}
END_TEST

START_TEST(nvflare_executor_row_follows_the_version)
{
    const struct roundtrim_fw_hook *old =
        roundtrim_fw_hook_find("nvflare.app_common.executors.client_api_launcher_executor",
                               "ClientAPILauncherExecutor.execute");
    const struct roundtrim_fw_hook *now =
        roundtrim_fw_hook_find("nvflare.app_common.executors.client_api.external_process_backend",
                               "ExternalProcessBackend.execute");
    ck_assert_ptr_nonnull(old);
    ck_assert_ptr_nonnull(now);
    ck_assert(roundtrim_fw_hook_applies(old, "2.7.2"));
    ck_assert(roundtrim_fw_hook_applies(old, "2.8.1"));
    ck_assert(!roundtrim_fw_hook_applies(old, "2.9.0dev0"));
    ck_assert(!roundtrim_fw_hook_applies(now, "2.8.1"));
    ck_assert(roundtrim_fw_hook_applies(now, "2.9.0dev0"));
    ck_assert(roundtrim_fw_hook_applies(now, "2.10.0"));
    /* An unknown version takes every row. */
    ck_assert(roundtrim_fw_hook_applies(old, NULL) && roundtrim_fw_hook_applies(now, NULL));
    /* So does a placeholder: a tree installed from a branch says "0+unknown". */
    ck_assert(roundtrim_fw_hook_applies(now, "0+unknown"));
    ck_assert(roundtrim_fw_hook_applies(now, "0+untagged.12.gf3b7c1b"));
    ck_assert(roundtrim_fw_hook_applies(old, "0"));
    ck_assert(!roundtrim_fw_hook_applies(now, "0.9")); /* a real version below the row's */
    ck_assert_str_eq(roundtrim_fw_role_name(now->role), "executor");
}
END_TEST

START_TEST(every_framework_has_its_round_functions)
{
    const struct roundtrim_fw_hook *send = roundtrim_fw_hook_find("nvflare.client.api", "send");
    ck_assert_ptr_nonnull(send);
    ck_assert_str_eq(send->framework, "nvflare");
    ck_assert_int_eq(send->role, RT_FW_CLIENT);
    ck_assert_ptr_nonnull(
        roundtrim_fw_hook_find("flwr.serverapp.strategy.fedavg", "FedAvg.aggregate_train"));
    const struct roundtrim_fw_hook *agent =
        roundtrim_fw_hook_find("appfl.agent.client", "ClientAgent.train");
    ck_assert_ptr_nonnull(agent);
    ck_assert(agent->yields_to_server);
    ck_assert_int_eq(roundtrim_fw_hook_find("appfl.algorithm.aggregator.fedavg_aggregator",
                                            "FedAvgAggregator.aggregate")
                         ->role,
                     RT_FW_SERVER);
    ck_assert_int_eq(roundtrim_fw_hook_find("appfl.agent.server", "ServerAgent.__init__")->role,
                     RT_FW_SERVER_SETUP);
    ck_assert_int_eq(
        roundtrim_fw_hook_find("flwr.supernode.runtime.run_clientapp", "run_clientapp")->role,
        RT_FW_PER_MESSAGE);
    /* Not a round: once per client per round. The 2.7-era name no longer exists. */
    ck_assert_ptr_null(roundtrim_fw_hook_find("appfl.agent.server", "ServerAgent.global_update"));
    ck_assert_ptr_null(
        roundtrim_fw_hook_find("nvflare.client.ex_process.api", "ExProcessClientAPI.send"));
    /* A prefix of a module name is not the module. */
    ck_assert_ptr_null(roundtrim_fw_hook_find("nvflare.client", "api:send"));
    ck_assert_ptr_null(roundtrim_fw_hook_find("nvflare.client.ap", "send"));
}
END_TEST

/* The SuperNode: a "train" message stored marks the round, the push of the replies after it ends
 * it; evaluate and query messages mark nothing. */
START_TEST(flower_supernode_rounds_follow_train_messages)
{
    const struct roundtrim_fw_hook *store = roundtrim_fw_hook_find(
        "flwr.supernode.nodestate.in_memory_nodestate", "InMemoryNodeState.store_message");
    const struct roundtrim_fw_hook *push =
        roundtrim_fw_hook_find("flwr.supernode.start_client_internal", "_push_messages");
    ck_assert_ptr_nonnull(store);
    ck_assert_ptr_nonnull(push);
    ck_assert_int_eq(store->role, RT_FW_MARK);
    ck_assert_str_eq(roundtrim_fw_role_name(store->role), "mark");
    ck_assert_ptr_nonnull(store->when);
    ck_assert_uint_eq(store->when->arg, 1); /* after self */
    ck_assert_str_eq(store->when->keyword, "message");
    ck_assert_str_eq(store->when->path, "_metadata._message_type");
    ck_assert(!store->after_mark);
    ck_assert_int_eq(push->role, RT_FW_NODE);
    ck_assert(push->after_mark);
    ck_assert_ptr_null(push->when);
    const char *word = store->when->word;
    ck_assert(roundtrim_fw_word_matches("train", word));
    ck_assert(roundtrim_fw_word_matches("train.custom", word));
    ck_assert(!roundtrim_fw_word_matches("evaluate", word));
    ck_assert(!roundtrim_fw_word_matches("query", word));
    ck_assert(!roundtrim_fw_word_matches("trainer", word));
    ck_assert(!roundtrim_fw_word_matches("trai", word));
    ck_assert(!roundtrim_fw_word_matches("", word));
}
END_TEST

START_TEST(rows_are_well_formed)
{
    for (size_t i = 0; i < roundtrim_fw_hook_count; i++) {
        const struct roundtrim_fw_hook *h = &roundtrim_fw_hooks[i];
        size_t fn = strlen(h->framework);
        /* The module is inside the framework's package, and named once. */
        ck_assert_int_eq(strncmp(h->target, h->framework, fn), 0);
        ck_assert(h->target[fn] == '.');
        ck_assert_ptr_nonnull(strchr(h->target, ':'));
        ck_assert_ptr_null(strchr(strchr(h->target, ':') + 1, ':'));
        for (size_t k = 0; k < i; k++)
            ck_assert_str_ne(roundtrim_fw_hooks[k].target, h->target);
        if (h->min_version && h->below)
            ck_assert_int_lt(roundtrim_version_compare(h->min_version, h->below), 0);
        /* A mark without a test would mark every call; a row after a mark needs one. */
        ck_assert(h->role != RT_FW_MARK || h->when);
        if (h->when)
            ck_assert(h->when->path[0] && h->when->word[0] && !strchr(h->when->word, '.'));
        bool marked = false;
        for (size_t k = 0; k < roundtrim_fw_hook_count && h->after_mark; k++)
            marked |= roundtrim_fw_hooks[k].role == RT_FW_MARK &&
                      strcmp(roundtrim_fw_hooks[k].framework, h->framework) == 0;
        ck_assert(!h->after_mark || marked);
    }
}
END_TEST

START_TEST(labels_name_the_frameworks_as_operators_know_them)
{
    for (size_t i = 0; i < roundtrim_fw_hook_count; i++) {
        const char *label = roundtrim_fw_label(roundtrim_fw_hooks[i].framework);
        ck_assert(strcmp(label, "nvflare") == 0 || strcmp(label, "flower") == 0 ||
                  strcmp(label, "appfl") == 0);
    }
    ck_assert_str_eq(roundtrim_fw_label("flwr"), "flower");
    ck_assert_str_eq(roundtrim_fw_label(NULL), "none");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("framework_hooks");
    TCase *tc = tcase_create("table");
    tcase_add_test(tc, versions_compare_part_by_part);
    tcase_add_test(tc, nvflare_executor_row_follows_the_version);
    tcase_add_test(tc, every_framework_has_its_round_functions);
    tcase_add_test(tc, flower_supernode_rounds_follow_train_messages);
    tcase_add_test(tc, rows_are_well_formed);
    tcase_add_test(tc, labels_name_the_frameworks_as_operators_know_them);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
