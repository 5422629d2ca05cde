/* roundtrim-options: prints roundtrim's option table (policy/options.c) in the forms people paste
 * into their deployments, so that `roundtrim env`, the README's table and the library's parser can
 * never disagree: they all read the same rows.
 *
 *   roundtrim-options --format markdown              the README's variable table
 *   roundtrim-options --format tsv [--role R]        one row per option, for programs
 *   roundtrim-options --format sh|docker|k8s [--role R] [--preload LIB]
 *                                                    lines for sub_start.sh, a Dockerfile, a pod
 *
 * The values printed for sh/docker/k8s are the table's defaults for the role; the caller's own
 * environment is deliberately not read, so the output is the same on every machine. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/framework_hooks.h"
#include "policy/options.h"

enum format { FMT_MARKDOWN, FMT_TSV, FMT_SH, FMT_DOCKER, FMT_K8S };

struct request {
    enum format format;
    const char *role; /* NULL: the table's default role */
    const char *preload;
};

static const char *const format_names[] = {"markdown", "tsv", "sh", "docker", "k8s"};

static void usage(FILE *out)
{
    fputs("Usage: roundtrim-options --format markdown|tsv|sh|docker|k8s [--role client|server]\n"
          "                         [--preload LIB]\n"
          "Prints roundtrim's option table: every ROUNDTRIM_* variable, its default and meaning.\n"
          "  --format markdown  the variable table of the README\n"
          "  --format tsv       name, alias, default, value, source, meaning; tab-separated\n"
          "  --format sh        export lines for sub_start.sh\n"
          "  --format docker    ENV lines for a Dockerfile\n"
          "  --format k8s       an env: list for a Kubernetes container\n"
          "  --role R           print the values the role client or server uses\n"
          "  --preload LIB      also set LD_PRELOAD to LIB (sh, docker, k8s)\n"
          "roundtrim-options --round-signal VALUE\n"
          "  prints the number of the round signal a process with ROUNDTRIM_ROUND_SIGNAL=VALUE\n"
          "  uses (0: none), by the library's own rules\n",
          out);
}

static int usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "roundtrim-options: %s%s%s\nTry 'roundtrim-options --help'.\n", what,
            arg ? ": " : "", arg ? arg : "");
    return 2;
}

/* The role is the only variable the printed values depend on. */
static const char *role_lookup(void *ctx, const char *name)
{
    return strcmp(name, "ROUNDTRIM_ROLE") == 0 ? (const char *)ctx : NULL;
}

/* Whether a deployment file should set the option, rather than only mention it: the role and
 * what the role decides. Everything else keeps its default and is shown commented out. */
static bool option_is_active(const struct roundtrim_config *cfg, enum roundtrim_option_id id)
{
    return id == RT_OPT_ROLE || cfg->setting[id].source == RT_FROM_ROLE;
}

/* Text with characters that would break a one-line field replaced by spaces. */
static void put_flat(FILE *out, const char *s, bool escape_pipe)
{
    for (; *s; s++) {
        if (*s == '\t' || *s == '\n' || *s == '\r')
            fputc(' ', out);
        else if (escape_pipe && *s == '|')
            fputs("\\|", out);
        else
            fputc(*s, out);
    }
}

/* The inside of a double-quoted string that sh, a Dockerfile's ENV and YAML all read back as s. */
static void put_quoted_body(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\' || *s == '$' || *s == '`')
            fputc('\\', out);
        fputc(*s, out);
    }
}

static void put_quoted(FILE *out, const char *s)
{
    fputc('"', out);
    put_quoted_body(out, s);
    fputc('"', out);
}

/* A commented-out setting: the value it keeps, or "..." when by default it has none. */
static void put_inactive_value(FILE *out, const char *value)
{
    if (*value)
        put_quoted(out, value);
    else
        fputs("\"...\"", out);
}

static void print_markdown(FILE *out)
{
    fputs("| Variable | Also read | Default | Meaning |\n", out);
    fputs("|---|---|---|---|\n", out);
    for (int i = 0; i < RT_OPT_COUNT; i++) {
        const struct roundtrim_option *o = &roundtrim_options[i];
        fprintf(out, "| `%s` | %s%s%s | ", o->name, o->alias ? "`" : "", o->alias ? o->alias : "",
                o->alias ? "`" : "");
        char dflt[128];
        roundtrim_option_default_text(o, dflt, sizeof dflt);
        put_flat(out, dflt, true);
        fputs(" | ", out);
        put_flat(out, o->meaning, true);
        fputs(" |\n", out);
    }
}

static void print_tsv(FILE *out, const struct roundtrim_config *cfg)
{
    fputs("name\talias\tdefault\tvalue\tsource\tmeaning\n", out);
    for (int i = 0; i < RT_OPT_COUNT; i++) {
        const struct roundtrim_option *o = &roundtrim_options[i];
        char value[256];
        roundtrim_config_value_text(cfg, o->id, value, sizeof value);
        char dflt[128];
        roundtrim_option_default_text(o, dflt, sizeof dflt);
        fprintf(out, "%s\t%s\t", o->name, o->alias ? o->alias : "");
        put_flat(out, dflt, false);
        fputc('\t', out);
        put_flat(out, value, false);
        fprintf(out, "\t%s\t", roundtrim_config_source_text(cfg, o->id));
        put_flat(out, o->meaning, false);
        fputc('\n', out);
    }
}

/* The hooks ROUNDTRIM_PY_HOOK=auto arms: they attach in a process that imports their framework
 * (the version ranges in brackets). */
static void put_framework_hooks(FILE *out, const char *indent)
{
    fprintf(out, "%s#   auto arms, for the framework a process imports:\n", indent);
    for (size_t i = 0; i < roundtrim_fw_hook_count; i++) {
        const struct roundtrim_fw_hook *h = &roundtrim_fw_hooks[i];
        fprintf(out, "%s#     %s (%s", indent, h->target, roundtrim_fw_role_name(h->role));
        if (h->min_version)
            fprintf(out, ", %s from %s", h->framework, h->min_version);
        if (h->below)
            fprintf(out, ", %s before %s", h->framework, h->below);
        if (h->when)
            fprintf(out, ", when argument %u's %s is \"%s\" or \"%s.*\"", h->when->arg,
                    h->when->path, h->when->word, h->when->word);
        if (h->after_mark)
            fputs(", after a mark", out);
        fputs(")\n", out);
    }
}

/* One comment line per option: its default, the other variable it is also read from, and its
 * meaning. The setting's own line carries no comment, so that uncommenting it gives valid text in
 * all three formats (a Dockerfile allows no comment after an instruction). */
static void put_meaning_comment(FILE *out, const char *indent, const struct roundtrim_option *o)
{
    char dflt[128];
    roundtrim_option_default_text(o, dflt, sizeof dflt);
    fprintf(out, "%s# %s (default: ", indent, o->name);
    put_flat(out, dflt, false);
    if (o->alias)
        fprintf(out, "; also read from %s", o->alias);
    fputs("): ", out);
    put_flat(out, o->meaning, false);
    fputc('\n', out);
    if (o->id == RT_OPT_PY_HOOK)
        put_framework_hooks(out, indent);
}

static void put_header(FILE *out, const struct roundtrim_config *cfg, const char *format,
                       const char *what)
{
    const char *role = roundtrim_role_name(cfg->role);
    fprintf(out, "# roundtrim settings for a %s %s (roundtrim env --role %s --format %s)\n", role,
            what, role, format);
}

/* One line per option: `keyword NAME=value` for the settings in force, the others commented
 * out with their default; each under a comment saying what it does. */
static void put_assignments(FILE *out, const struct roundtrim_config *cfg, const char *keyword)
{
    for (int i = 0; i < RT_OPT_COUNT; i++) {
        const struct roundtrim_option *o = &roundtrim_options[i];
        char value[256];
        roundtrim_config_value_text(cfg, o->id, value, sizeof value);
        put_meaning_comment(out, "", o);
        if (option_is_active(cfg, o->id)) {
            fprintf(out, "%s %s=", keyword, o->name);
            put_quoted(out, value);
        } else {
            fprintf(out, "# %s %s=", keyword, o->name);
            put_inactive_value(out, value);
        }
        fputc('\n', out);
    }
}

static void print_sh(FILE *out, const struct roundtrim_config *cfg, const char *preload)
{
    put_header(out, cfg, "sh", "process");
    if (preload) {
        fputs("# Preload the library; entries already in LD_PRELOAD are kept after it.\n", out);
        fputs("LD_PRELOAD=\"", out);
        put_quoted_body(out, preload);
        fputs("${LD_PRELOAD:+:$LD_PRELOAD}\"\n", out);
        fputs("export LD_PRELOAD\n", out);
    }
    put_assignments(out, cfg, "export");
}

static void print_docker(FILE *out, const struct roundtrim_config *cfg, const char *preload)
{
    put_header(out, cfg, "docker", "process");
    fputs("# Put these lines last: LD_PRELOAD also applies to every RUN step after it.\n", out);
    put_assignments(out, cfg, "ENV");
    if (preload) {
        fputs("# Preload the library (a path inside the image).\n", out);
        fputs("ENV LD_PRELOAD=", out);
        put_quoted(out, preload);
        fputc('\n', out);
    }
}

static void print_k8s(FILE *out, const struct roundtrim_config *cfg, const char *preload)
{
    put_header(out, cfg, "k8s", "container");
    fputs("env:\n", out);
    if (preload) {
        fputs("  # Preload the library (a path inside the container).\n", out);
        fputs("  - name: LD_PRELOAD\n    value: ", out);
        put_quoted(out, preload);
        fputc('\n', out);
    }
    for (int i = 0; i < RT_OPT_COUNT; i++) {
        const struct roundtrim_option *o = &roundtrim_options[i];
        char value[256];
        roundtrim_config_value_text(cfg, o->id, value, sizeof value);
        put_meaning_comment(out, "  ", o);
        if (option_is_active(cfg, o->id)) {
            fprintf(out, "  - name: %s\n    value: ", o->name);
            put_quoted(out, value);
        } else {
            fprintf(out, "  # - name: %s\n  #   value: ", o->name);
            put_inactive_value(out, value);
        }
        fputc('\n', out);
    }
}

static int parse_args(int argc, char **argv, struct request *req, bool *format_given)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        const char *format_text = NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--format") == 0 || strcmp(a, "--role") == 0 ||
                   strcmp(a, "--preload") == 0) {
            if (i + 1 >= argc)
                return usage_error("missing a value after", a);
            if (strcmp(a, "--format") == 0)
                format_text = argv[++i];
            else
                slot = strcmp(a, "--role") == 0 ? &req->role : &req->preload;
            if (slot)
                *slot = argv[++i];
        } else {
            return usage_error("unknown argument", a);
        }
        if (format_text) {
            size_t n = sizeof format_names / sizeof format_names[0];
            size_t f = 0;
            while (f < n && strcmp(format_text, format_names[f]) != 0)
                f++;
            if (f == n)
                return usage_error("unknown format (expected markdown, tsv, sh, docker or k8s)",
                                   format_text);
            req->format = (enum format)f;
            *format_given = true;
        }
    }
    if (req->role && strcmp(req->role, "client") != 0 && strcmp(req->role, "server") != 0)
        return usage_error("unknown role (expected client or server)", req->role);
    if (req->preload && req->preload[0] != '/')
        return usage_error("the library to preload needs an absolute path", req->preload);
    return 0;
}

static const char *signal_lookup(void *ctx, const char *name)
{
    return strcmp(name, "ROUNDTRIM_ROUND_SIGNAL") == 0 ? (const char *)ctx : NULL;
}

/* The signal number a process with ROUNDTRIM_ROUND_SIGNAL=value takes as its round signal (0:
 * none), by the library's own rules, its fallback for a bad value included: what
 * `roundtrim round` must send. */
static int print_round_signal(const char *value)
{
    static struct roundtrim_config cfg;
    roundtrim_config_load(&cfg, signal_lookup, (void *)value);
    printf("%d\n", cfg.round_signal);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--round-signal") == 0)
        return print_round_signal(argv[2]);
    struct request req = {FMT_MARKDOWN, NULL, NULL};
    bool format_given = false;
    int rc = parse_args(argc, argv, &req, &format_given);
    if (rc)
        return rc;
    if (!format_given)
        return usage_error("missing --format", NULL);

    static struct roundtrim_config cfg;
    roundtrim_config_load(&cfg, role_lookup, (void *)req.role);
    switch (req.format) {
    case FMT_MARKDOWN:
        print_markdown(stdout);
        break;
    case FMT_TSV:
        print_tsv(stdout, &cfg);
        break;
    case FMT_SH:
        print_sh(stdout, &cfg, req.preload);
        break;
    case FMT_DOCKER:
        print_docker(stdout, &cfg, req.preload);
        break;
    case FMT_K8S:
        print_k8s(stdout, &cfg, req.preload);
        break;
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        perror("roundtrim-options: cannot write the table");
        return 1;
    }
    return 0;
}
