/* roundtrim-options: prints roundtrim's option table (policy/options.c) in the forms people paste
 * into their deployments, so that `roundtrim env`, the configuration page's table and the library's
 * parser can never disagree: they all read the same rows.
 *
 *   roundtrim-options --format markdown              docs/reference/configuration.md's table
 *   roundtrim-options --format tsv [--role R]        one row per option, for programs
 *   roundtrim-options --format man [--source TEXT]   the manual page roundtrim-variables(7)
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
#include "policy/option_names.h"
#include "policy/options.h"
#include "policy/parse.h"

enum format { FMT_MARKDOWN, FMT_TSV, FMT_SH, FMT_DOCKER, FMT_K8S, FMT_MAN };

struct request {
    enum format format;
    const char *role; /* NULL: the table's default role */
    const char *preload;
    const char *source; /* the manual page's source and version: "roundtrim 0.1.0" */
};

static const char *const format_names[] = {"markdown", "tsv", "sh", "docker", "k8s", "man"};

static void usage(FILE *out)
{
    fputs(
        "Usage: roundtrim-options --format markdown|tsv|sh|docker|k8s|man\n"
        "                         [--role client|server] [--preload LIB] [--source TEXT]\n"
        "Prints roundtrim's option table: every ROUNDTRIM_* variable, its default and meaning.\n"
        "  --format markdown  the variable table of docs/reference/configuration.md\n"
        "  --format tsv       name, alias, default, value, source, meaning; tab-separated\n"
        "  --format sh        export lines for sub_start.sh\n"
        "  --format docker    ENV lines for a Dockerfile\n"
        "  --format k8s       an env: list for a Kubernetes container\n"
        "  --format man       the manual page roundtrim-variables(7), in roff\n"
        "  --role R           print the values the role client or server uses\n"
        "  --preload LIB      also set LD_PRELOAD to LIB (sh, docker, k8s)\n"
        "  --source TEXT      the manual page's source and version (man), e.g. 'roundtrim 0.1.0'\n"
        "roundtrim-options --round-signal VALUE\n"
        "  prints the number of the round signal a process with ROUNDTRIM_ROUND_SIGNAL=VALUE\n"
        "  uses (0: none), by the library's own rules\n"
        "roundtrim-options --bool VALUE\n"
        "  exit status 0 when the library reads VALUE as true, 1 as false, 2 as neither\n"
        "roundtrim-options --check NAME=VALUE\n"
        "  prints the warning the library would give for the variable NAME set to VALUE, and\n"
        "  exits with 1; nothing, and 0, when the library takes it as it is\n",
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
    return strcmp(name, roundtrim_options[RT_OPT_ROLE].name) == 0 ? (const char *)ctx : NULL;
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

/* A YAML double-quoted scalar that Kubernetes reads back as s: YAML's own escapes (a backslash
 * before '$' or '`' is no YAML escape), and "$(" doubled, since Kubernetes expands $(VAR) in an
 * env value and reads "$$(" as a literal "$(". */
static void put_k8s_quoted(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(out, "\\x%02x", c);
        else if (c == '$' && s[1] == '(')
            fputs("$$", out);
        else
            fputc(c, out);
    }
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
/* " (role, versions, conditions)" after a hook's target: words, dotted versions and names only,
 * which a comment and a manual page alike print as they are. */
static void put_hook_conditions(FILE *out, const struct roundtrim_fw_hook *h)
{
    fprintf(out, " (%s", roundtrim_fw_role_name(h->role));
    if (h->min_version)
        fprintf(out, ", %s from %s", h->framework, h->min_version);
    if (h->below)
        fprintf(out, ", %s before %s", h->framework, h->below);
    if (h->when)
        fprintf(out, ", when argument %u's %s is \"%s\" or \"%s.*\"", h->when->arg, h->when->path,
                h->when->word, h->when->word);
    if (h->after_mark)
        fputs(", after a mark", out);
    fputs(")\n", out);
}

static void put_framework_hooks(FILE *out, const char *indent)
{
    fprintf(out, "%s#   auto arms, for the framework a process imports:\n", indent);
    for (size_t i = 0; i < roundtrim_fw_hook_count; i++) {
        fprintf(out, "%s#     %s", indent, roundtrim_fw_hooks[i].target);
        put_hook_conditions(out, &roundtrim_fw_hooks[i]);
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
        put_k8s_quoted(out, preload);
        fputc('\n', out);
    }
    for (int i = 0; i < RT_OPT_COUNT; i++) {
        const struct roundtrim_option *o = &roundtrim_options[i];
        char value[256];
        roundtrim_config_value_text(cfg, o->id, value, sizeof value);
        put_meaning_comment(out, "  ", o);
        if (option_is_active(cfg, o->id)) {
            fprintf(out, "  - name: %s\n    value: ", o->name);
            put_k8s_quoted(out, value);
        } else {
            fprintf(out, "  # - name: %s\n  #   value: ", o->name);
            if (*value)
                put_k8s_quoted(out, value);
            else
                fputs("\"...\"", out);
        }
        fputc('\n', out);
    }
}

/* Text as roff reads it back: a backslash is \e, a dash the minus sign \- (so that a value
 * such as RTMAX-2 or --role pastes back as typed), a line never starts with a control
 * character, and line breaks become spaces. */
static void put_roff_char(FILE *out, char c)
{
    if (c == '\\')
        fputs("\\e", out);
    else if (c == '-')
        fputs("\\-", out);
    else if (c == '\n' || c == '\r' || c == '\t')
        fputc(' ', out);
    else
        fputc(c, out);
}

static void put_roff(FILE *out, const char *s)
{
    if (*s == '.' || *s == '\'')
        fputs("\\&", out);
    for (; *s; s++)
        put_roff_char(out, *s);
}

/* A dotted name (module.path:Class.method), longer than a line at times: it may break after a
 * dot or a colon, with no hyphen added (\:). */
static void put_roff_dotted(FILE *out, const char *s)
{
    if (*s == '.' || *s == '\'')
        fputs("\\&", out);
    for (; *s; s++) {
        put_roff_char(out, *s);
        if (*s == '.' || *s == ':')
            fputs("\\:", out);
    }
}

/* The hooks ROUNDTRIM_PY_HOOK=auto arms, one indented paragraph each. */
static void put_man_framework_hooks(FILE *out)
{
    fputs(".RS\n.PP\nauto arms, for the framework a process imports:\n", out);
    for (size_t i = 0; i < roundtrim_fw_hook_count; i++) {
        fputs(".IP \\(bu 2\n", out);
        put_roff_dotted(out, roundtrim_fw_hooks[i].target);
        put_hook_conditions(out, &roundtrim_fw_hooks[i]);
    }
    fputs(".RE\n", out);
}

/* roundtrim-variables(7): every row of the table, as the configuration page's table has it. No
 * date, so that the same table always gives the same page (reproducible builds). */
static void print_man(FILE *out, const char *source)
{
    fputs(".\\\" Generated by roundtrim-options --format man from the option table "
          "(policy/options.c).\n"
          ".\\\" Do not edit: change the table and rebuild.\n",
          out);
    fputs(".TH ROUNDTRIM\\-VARIABLES 7 \"\" \"", out);
    put_roff(out, source);
    fputs("\" \"roundtrim\"\n", out);
    fputs(
        ".SH NAME\n"
        "roundtrim\\-variables \\- the environment variables of libroundtrim.so\n"
        ".SH DESCRIPTION\n"
        "libroundtrim.so, preloaded into a process (\\fBroundtrim run\\fR, \\fBLD_PRELOAD\\fR or\n"
        "\\fI/etc/ld.so.preload\\fR), reads these variables once, when the process starts.\n"
        "A bad value gives one line on standard error naming the variable and the value\n"
        "used instead, and the program goes on.\n"
        "Where a variable is also read from another one, the ROUNDTRIM_ variable wins when\n"
        "both are set.\n"
        "A process that runs with raised privileges (setuid, setgid or file capabilities)\n"
        "reads none of them: roundtrim only forwards the calls it interposes there.\n"
        ".PP\n"
        "\\fBroundtrim env\\fR prints them ready to paste into a start script, a Dockerfile\n"
        "or a Kubernetes pod spec, with the values of a role.\n"
        ".SH VARIABLES\n"
        /* Left-aligned and unhyphenated: the text is full of long names that must paste back
         * as written (ROUNDTRIM_..., /proc/self/clear_refs). */
        ".ad l\n"
        ".nh\n",
        out);
    for (int i = 0; i < RT_OPT_COUNT; i++) {
        const struct roundtrim_option *o = &roundtrim_options[i];
        char dflt[128];
        roundtrim_option_default_text(o, dflt, sizeof dflt);
        fputs(".TP\n.B ", out);
        put_roff(out, o->name);
        fputs("\n", out);
        put_roff(out, o->meaning);
        fputs(".\n.br\nDefault: ", out);
        put_roff(out, dflt);
        fputs(".\n", out);
        if (o->alias) {
            fputs("Also read from \\fB", out);
            put_roff(out, o->alias);
            fputs("\\fR.\n", out);
        }
        if (o->id == RT_OPT_PY_HOOK)
            put_man_framework_hooks(out);
    }
    fputs(".SH SEE ALSO\n"
          ".BR roundtrim (1),\n"
          ".BR ld.so (8)\n",
          out);
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
                   strcmp(a, "--preload") == 0 || strcmp(a, "--source") == 0) {
            if (i + 1 >= argc)
                return usage_error("missing a value after", a);
            if (strcmp(a, "--format") == 0)
                format_text = argv[++i];
            else if (strcmp(a, "--source") == 0)
                slot = &req->source;
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
                return usage_error(
                    "unknown format (expected markdown, tsv, sh, docker, k8s or man)", format_text);
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
    return strcmp(name, roundtrim_options[RT_OPT_ROUND_SIGNAL].name) == 0 ? (const char *)ctx
                                                                          : NULL;
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

struct one_variable {
    const char *name;
    size_t name_len;
    const char *value;
};

static const char *one_variable_lookup(void *ctx, const char *name)
{
    const struct one_variable *v = ctx;
    return strlen(name) == v->name_len && strncmp(name, v->name, v->name_len) == 0 ? v->value
                                                                                   : NULL;
}

/* The warnings a process given only the variable of `entry` (NAME=VALUE) writes about it. */
static int check_variable(const char *entry)
{
    const char *eq = strchr(entry, '=');
    if (!eq || eq == entry)
        return usage_error("--check: expected NAME=VALUE", entry);
    struct one_variable v = {entry, (size_t)(eq - entry), eq + 1};
    char line[ROUNDTRIM_WARNING_LEN];
    if (roundtrim_unknown_variable_warning(entry, NULL, NULL, line, sizeof line)) {
        printf("%s\n", line);
        return 1;
    }
    static struct roundtrim_config cfg;
    roundtrim_config_load(&cfg, one_variable_lookup, &v);
    for (unsigned i = 0; i < cfg.warning_count; i++)
        printf("%s\n", cfg.warnings[i]);
    return cfg.warning_count > 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--check") == 0)
        return check_variable(argv[2]);
    if (argc == 3 && strcmp(argv[1], "--round-signal") == 0)
        return print_round_signal(argv[2]);
    if (argc == 3 && strcmp(argv[1], "--bool") == 0) {
        bool value;
        return roundtrim_parse_bool(argv[2], &value) ? !value : 2;
    }
    struct request req = {FMT_MARKDOWN, NULL, NULL, "roundtrim"};
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
    case FMT_MAN:
        print_man(stdout, req.source);
        break;
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        perror("roundtrim-options: cannot write the table");
        return 1;
    }
    return 0;
}
