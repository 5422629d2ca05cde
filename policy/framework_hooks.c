#include "policy/framework_hooks.h"

#include <stdlib.h>
#include <string.h>

#define ANY NULL

/* store_message(self, message): Flower's Message keeps its Metadata in __dict__["_metadata"], the
 * Metadata its type in __dict__["_message_type"] (behind properties, 1.20 to 1.28). */
static const struct roundtrim_fw_test flower_train_message = {1, "message",
                                                              "_metadata._message_type", "train"};

/* Checked against NVFlare 2.7.2, 2.8.1 and main (2.9.0dev0), Flower 1.19 to 1.28 and APPFL 1.10.
 * Flower's strategies that override aggregate_train without calling FedAvg's each have a row (a
 * hooked call inside another counts once). */
const struct roundtrim_fw_hook roundtrim_fw_hooks[] = {
    /* NVFlare Client API: flare.send(), also under @flare.train and the Lightning and HF
     * integrations; in-process (the client job process) and external-process (the trainer). */
    {"nvflare", "nvflare.client.api:send", RT_FW_CLIENT, ANY, ANY, false, NULL, false},
    /* The client job process that launched an external trainer: one task per round. */
    {"nvflare",
     "nvflare.app_common.executors.client_api_launcher_executor:"
     "ClientAPILauncherExecutor.execute",
     RT_FW_EXECUTOR, ANY, "2.9", false, NULL, false},
    {"nvflare",
     "nvflare.app_common.executors.client_api.external_process_backend:"
     "ExternalProcessBackend.execute",
     RT_FW_EXECUTOR, "2.9", ANY, false, NULL, false},
    {"nvflare", "nvflare.app_common.executors.client_api.attach_backend:AttachBackend.execute",
     RT_FW_EXECUTOR, "2.9", ANY, false, NULL, false},
    /* Flower, legacy clients (start_client, NumPyClient or Client through client_fn). */
    {"flwr", "flwr.client.numpy_client:_fit", RT_FW_CLIENT, ANY, ANY, false, NULL, false},
    {"flwr", "flwr.client.client:maybe_call_fit", RT_FW_CLIENT, ANY, ANY, false, NULL, false},
    /* Flower deployment engine: a flwr-clientapp process handles one message and exits; its
     * start and exit records tell what the message cost. A legacy client inside counts no round
     * there (it does in a simulation's long-lived workers). */
    {"flwr", "flwr.supernode.runtime.run_clientapp:run_clientapp", RT_FW_PER_MESSAGE, ANY, ANY,
     false, NULL, false},
    /* Flower, legacy server loop (Strategy API). */
    {"flwr", "flwr.server.server:Server.fit_round", RT_FW_SERVER, ANY, ANY, false, NULL, false},
    /* Flower deployment engine: the SuperNode stores each message it pulls (main thread) and each
     * reply its ClientApp hands back (a gRPC thread) through its NodeState; a "train" or
     * "train.<action>" one marks the round, and the push of the replies that follows ends it.
     * Evaluate and query messages (a federated evaluation alone) make no round. */
    {"flwr", "flwr.supernode.nodestate.in_memory_nodestate:InMemoryNodeState.store_message",
     RT_FW_MARK, ANY, ANY, false, &flower_train_message, false},
    {"flwr", "flwr.supernode.start_client_internal:_push_messages", RT_FW_NODE, ANY, ANY, false,
     NULL, true},
    /* Flower Message API strategies in the ServerApp: one boundary per aggregation. */
    {"flwr", "flwr.serverapp.strategy.fedavg:FedAvg.aggregate_train", RT_FW_SERVER, ANY, ANY, false,
     NULL, false},
    {"flwr", "flwr.serverapp.strategy.bulyan:Bulyan.aggregate_train", RT_FW_SERVER, ANY, ANY, false,
     NULL, false},
    {"flwr", "flwr.serverapp.strategy.fedmedian:FedMedian.aggregate_train", RT_FW_SERVER, ANY, ANY,
     false, NULL, false},
    {"flwr", "flwr.serverapp.strategy.fedtrimmedavg:FedTrimmedAvg.aggregate_train", RT_FW_SERVER,
     ANY, ANY, false, NULL, false},
    {"flwr", "flwr.serverapp.strategy.fedxgb_bagging:FedXgbBagging.aggregate_train", RT_FW_SERVER,
     ANY, ANY, false, NULL, false},
    {"flwr", "flwr.serverapp.strategy.fedxgb_cyclic:FedXgbCyclic.aggregate_train", RT_FW_SERVER,
     ANY, ANY, false, NULL, false},
    {"flwr", "flwr.serverapp.strategy.multikrum:MultiKrum.aggregate_train", RT_FW_SERVER, ANY, ANY,
     false, NULL, false},
    {"flwr", "flwr.serverapp.strategy.qfedavg:QFedAvg.aggregate_train", RT_FW_SERVER, ANY, ANY,
     false, NULL, false},
    /* APPFL: each client's local training, and the synchronous FedAvg family's aggregation
     * (FedAvgM, FedAdam, FedYogi, FedAdagrad inherit it). */
    {"appfl", "appfl.agent.client:ClientAgent.train", RT_FW_CLIENT, ANY, ANY, true, NULL, false},
    {"appfl", "appfl.algorithm.aggregator.fedavg_aggregator:FedAvgAggregator.aggregate",
     RT_FW_SERVER, ANY, ANY, false, NULL, false},
    /* A process that creates the server agent is the server, or a serial simulation. */
    {"appfl", "appfl.agent.server:ServerAgent.__init__", RT_FW_SERVER_SETUP, ANY, ANY, false, NULL,
     false},
};

const size_t roundtrim_fw_hook_count = sizeof roundtrim_fw_hooks / sizeof roundtrim_fw_hooks[0];

const char *roundtrim_fw_label(const char *framework)
{
    if (!framework)
        return "none";
    return strcmp(framework, "flwr") == 0 ? "flower" : framework;
}

const char *roundtrim_fw_role_name(enum roundtrim_fw_role role)
{
    switch (role) {
    case RT_FW_CLIENT:
        return "client";
    case RT_FW_EXECUTOR:
        return "executor";
    case RT_FW_NODE:
        return "node";
    case RT_FW_SERVER:
        return "server";
    case RT_FW_PER_MESSAGE:
        return "per_message";
    case RT_FW_SERVER_SETUP:
        return "server_setup";
    case RT_FW_MARK:
        return "mark";
    }
    return "unknown";
}

bool roundtrim_fw_word_matches(const char *text, const char *word)
{
    size_t n = strlen(word);
    return strncmp(text, word, n) == 0 && (text[n] == 0 || text[n] == '.');
}

/* The number at the start of a part; *p moves past the part and its dot. */
static unsigned long version_part(const char **p)
{
    const char *s = *p;
    unsigned long v = 0;
    while (*s >= '0' && *s <= '9') {
        if (v < 100000000ul)
            v = v * 10 + (unsigned long)(*s - '0');
        s++;
    }
    while (*s && *s != '.')
        s++;
    if (*s == '.')
        s++;
    *p = s;
    return v;
}

int roundtrim_version_compare(const char *a, const char *b)
{
    while (*a || *b) {
        unsigned long x = version_part(&a), y = version_part(&b);
        if (x != y)
            return x < y ? -1 : 1;
    }
    return 0;
}

/* A version that says nothing: versioneer's "0+unknown" or "0+untagged.N.gHASH" of a source
 * tree or a branch archive (NVFlare installed from its main branch), a bare "0". */
static bool placeholder_version(const char *v)
{
    return v[0] == '0' && (v[1] == '\0' || v[1] == '+');
}

bool roundtrim_fw_hook_applies(const struct roundtrim_fw_hook *h, const char *version)
{
    if (!version || placeholder_version(version))
        return true;
    if (h->min_version && roundtrim_version_compare(version, h->min_version) < 0)
        return false;
    return !h->below || roundtrim_version_compare(version, h->below) < 0;
}

const struct roundtrim_fw_hook *roundtrim_fw_hook_find(const char *module, const char *qualname)
{
    size_t mn = strlen(module);
    for (size_t i = 0; i < roundtrim_fw_hook_count; i++) {
        const char *t = roundtrim_fw_hooks[i].target;
        if (strncmp(t, module, mn) == 0 && t[mn] == ':' && strcmp(t + mn + 1, qualname) == 0)
            return &roundtrim_fw_hooks[i];
    }
    return NULL;
}
