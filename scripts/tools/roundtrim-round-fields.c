/* roundtrim-round-fields: prints the round record's field table (policy/round_fields.def), the
 * skip reasons (policy/skip_reasons.def), what the diagnosis reads of a round record
 * (policy/diag_input.def), the causes and findings it names (policy/diag_causes.def) and the
 * options' defaults (policy/options.def) in the forms the rest of the project reads, so that the
 * writer, the report, the reference page and the Prometheus rules say the same:
 *
 *   roundtrim-round-fields --markdown       docs/reference/round-log.md
 *   roundtrim-round-fields --python         scripts/roundtrim_report/fields.py
 *   roundtrim-round-fields --prom-expected  the reasons that are no failure, as a PromQL
 *                                           alternation (program_gc|program_trim|...)
 *   roundtrim-round-fields --event-keys R   the keys of another record, from its table: R is
 *                                           start, setting, exit, pressure, holders or
 *                                           holder (runtime/output,
 *                                           docs/reference/log-file.md), diagnosis,
 *                                           diagnosis-reasons, forecast, advice-sites, sites,
 *                                           site, py-frame or native-frame
 *                                           (policy/diagnosis_fields.def,
 *                                           runtime/output/sites_fields.def,
 *                                           runtime/sites/native_frame_fields.def;
 *                                           docs/diagnosis.md)
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "policy/diagnosis.h"
#include "policy/options.h"
#include "policy/pressure.h"
#include "runtime/output/sites_record.h"

struct field {
    const char *name, *kind, *unit, *when, *meaning;
};

struct kind {
    const char *kind, *type, *check;
};

struct step {
    const char *step, *skip, *label;
};

/* A named row of a table with its words: a skip reason (flag: expected), a cause (flag: a
 * verdict), a finding or a diagnosis reason (flag unused). */
struct named {
    const char *name;
    int flag;
    const char *text;
};

static const struct kind kinds[] = {
#define RT_KIND(kind, type, check) {#kind, type, check},
#include "policy/round_fields.def"
};

static const struct field fields[] = {
#define RT_FIELD(name, kind, unit, when, meaning, present, null_if, value)                         \
    {#name, #kind, unit, when, meaning},
#include "policy/round_fields.def"
};

static const struct field memory_fields[] = {
#define RT_MEMORY_FIELD(name, kind, unit, when, meaning, present, null_if, value)                  \
    {#name, #kind, unit, when, meaning},
#include "policy/round_fields.def"
};

static const struct field parts[] = {
#define RT_MEM_PART(id, name, resident, words, meaning)                                            \
    {#name, "UINT_OR_NULL", "bytes", "", meaning},
#include "policy/round_fields.def"
};

static const struct {
    const char *name;
    int resident;
    const char *words;
} part_words[] = {
#define RT_MEM_PART(id, name, resident, words, meaning) {#name, resident, words},
#include "policy/round_fields.def"
};

static const struct step steps[] = {
#define RT_STEP(step, skip, label) {#step, #skip, label},
#include "policy/round_fields.def"
};

static const struct named reasons[] = {
#define RT_SKIP_REASON(name, expected, meaning) {#name, expected, meaning},
#include "policy/skip_reasons.def"
};

/* The reasons that hold a due cleanup back for its cost. */
static const char *const held_back[] = {
#define RT_SKIP_HELD_BACK(name) #name,
#include "policy/skip_reasons.def"
};

/* Words older versions wrote for a reason, and the reason's name now. */
static const struct {
    const char *old, *name;
} old_words[] = {
#define RT_SKIP_OLD_WORD(old, name) {#old, #name},
#include "policy/skip_reasons.def"
};

/* What the diagnosis reads of each round record (policy/diag_input.def), for the report. */
struct diag_input {
    const char *member, *kind, *record;
};
static const struct diag_input diag_inputs[] = {
#define RT_DIAG_IN(member, kind, record, value) {#member, #kind, record},
#include "policy/diag_input.def"
};
/* The cleanup actions the diagnosis weighs (RT_DIAG_ACTION rows): name, the sample's member. */
static const struct {
    const char *name, *given;
} diag_actions[] = {
#define RT_DIAG_ACTION(id, name, given) {#name, #given},
#include "policy/diag_input.def"
};
/* What the advice may refer to (the RT_DIAG_CONTEXT rows): member, kind, source. */
static const struct diag_input diag_context[] = {
#define RT_DIAG_CONTEXT(member, kind, source) {#member, #kind, source},
#include "policy/diag_input.def"
};

/* The causes of growth and the findings the diagnosis names (policy/diag_causes.def). */
static const struct named causes[] = {
#define RT_CAUSE(id, name, verdict, grows, words) {#name, verdict, words},
#include "policy/diag_causes.def"
};
static const struct named findings[] = {
#define RT_FINDING(id, name, meaning) {#name, 0, meaning},
#include "policy/diag_causes.def"
};
static const struct named diag_reasons[] = {
#define RT_DIAG_REASON(id, name, meaning) {#name, 0, meaning},
#include "policy/diag_causes.def"
};
static const struct named headroom_of[] = {
#define RT_HEADROOM_OF(id, name, meaning) {#name, 0, meaning},
#include "policy/diag_causes.def"
};
static const struct named sites_said[] = {
#define RT_SITES_SAID(id, name, meaning) {#name, 0, meaning},
#include "policy/diag_causes.def"
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The options' names and defaults (policy/options.def), for the report's reading of a log
 * without a start record. */
static const struct roundtrim_option options[] = {
#define ROUNDTRIM_OPTION(ID, field, TYPE, ...) {.name = "ROUNDTRIM_" #ID, __VA_ARGS__},
#include "policy/options.def"
#undef ROUNDTRIM_OPTION
};

/* The other records' keys (the *_fields.def tables of runtime/output). */
static const struct field start_fields[] = {
#define RT_EVENT_FIELD(name, kind, unit, when, meaning, present, value)                            \
    {#name, #kind, unit, when, meaning},
#include "runtime/output/start_fields.def"
};
static const struct field exit_fields[] = {
#define RT_EVENT_FIELD(name, kind, unit, when, meaning, present, value)                            \
    {#name, #kind, unit, when, meaning},
#include "runtime/output/summary_fields.def"
};
static const struct field pressure_fields[] = {
#define RT_EVENT_FIELD(name, kind, unit, when, meaning, present, value)                            \
    {#name, #kind, unit, when, meaning},
#include "runtime/output/pressure_fields.def"
};
static const struct field holders_fields[] = {
#define RT_EVENT_FIELD(name, kind, unit, when, meaning, present, value)                            \
    {#name, #kind, unit, when, meaning},
#include "runtime/output/holders_fields.def"
};
static const struct field holder_fields[] = {
#define RT_HOLDER_FIELD(name, kind, unit, when, meaning, present, value)                           \
    {#name, #kind, unit, when, meaning},
#include "runtime/output/holders_fields.def"
};

/* The sites record's, its sites' and their Python frames' (runtime/output/sites_fields.def). */
static const struct field sites_fields[] = {
#define RT_EVENT_FIELD(name, kind, unit, when, meaning, present, value)                            \
    {#name, #kind, unit, when, meaning},
#include "runtime/output/sites_fields.def"
};
static const struct field site_fields[] = {
#define RT_SITE_FIELD(name, kind, unit, when, meaning, present, value)                             \
    {#name, #kind, unit, when, meaning},
#include "runtime/output/sites_fields.def"
};
static const struct field py_frame_fields[] = {
#define RT_PY_FRAME_FIELD(name, kind, unit, when, meaning, present, value)                         \
    {#name, #kind, unit, when, meaning},
#include "runtime/output/sites_fields.def"
};
static const struct field setting_fields[] = {
#define RT_SETTING_FIELD(name, kind, unit, when, meaning, present, value)                          \
    {#name, #kind, unit, when, meaning},
#include "runtime/output/start_fields.def"
};
static const struct field native_frame_fields[] = {
#define RT_NATIVE_FRAME_FIELD(name, kind, unit, when, meaning, present, value)                     \
    {#name, #kind, unit, when, meaning},
#include "runtime/sites/native_frame_fields.def"
};

/* The diagnosis record's (policy/diagnosis_fields.def). */
static const struct field diagnosis_fields[] = {
#define RT_DIAG_FIELD(name, kind, unit, when, meaning, present, value)                             \
    {#name, #kind, unit, when, meaning},
#include "policy/diagnosis_fields.def"
};
static const struct field forecast_fields[] = {
#define RT_FORECAST_FIELD(name, kind, unit, when, meaning, present, value)                         \
    {#name, #kind, unit, when, meaning},
#include "policy/diagnosis_fields.def"
};
static const struct field advice_sites_fields[] = {
#define RT_ADVICE_SITES_FIELD(name, kind, unit, when, meaning, present, value)                     \
    {#name, #kind, unit, when, meaning},
#include "policy/diagnosis_fields.def"
};

/* The malloc family's counts, the round record's RT_TRAFFIC rows. */
static const struct field traffic[] = {
#define RT_TRAFFIC(name, unit, meaning) {#name, "UINT_OR_NULL", unit, "", meaning},
#include "policy/round_fields.def"
};

/* The kinds only the other records have (policy/event_kinds.def). */
static const struct kind event_kinds[] = {
#define RT_EVENT_KIND(kind, type, check) {#kind, type, check},
#include "policy/event_kinds.def"
};

static const struct kind *kind_of(const char *k)
{
    for (size_t i = 0; i < COUNT(kinds); i++)
        if (strcmp(kinds[i].kind, k) == 0)
            return &kinds[i];
    for (size_t i = 0; i < COUNT(event_kinds); i++)
        if (strcmp(event_kinds[i].kind, k) == 0)
            return &event_kinds[i];
    return &kinds[0]; /* every row's kind has an RT_KIND row: the table's own check */
}

/* Markdown table cell: a pipe would end the cell. */
static void cell(const char *s)
{
    for (; *s; s++)
        if (*s == '|')
            fputs("\\|", stdout);
        else
            putchar(*s);
}

static void markdown_row(const char *prefix, const char *name, const char *suffix, const char *type,
                         const char *unit, const char *when, const char *meaning)
{
    printf("| `%s%s%s` | ", prefix, name, suffix);
    cell(type);
    fputs(" | ", stdout);
    cell(unit);
    fputs(" | ", stdout);
    cell(when);
    fputs(" | ", stdout);
    cell(meaning);
    fputs(" |\n", stdout);
}

static void markdown_fields(const char *prefix, const struct field *f, size_t n)
{
    puts("| key | type | unit | present | meaning |");
    puts("|---|---|---|---|---|");
    for (size_t i = 0; i < n; i++) {
        if (strcmp(f[i].kind, "PARTS") != 0) {
            markdown_row(prefix, f[i].name, "", kind_of(f[i].kind)->type, f[i].unit, f[i].when,
                         f[i].meaning);
            continue;
        }
        for (size_t p = 0; p < COUNT(parts); p++) {
            char when[96];
            snprintf(when, sizeof when, "always (null with %s_skipped)", parts[p].name);
            markdown_row(prefix, parts[p].name, "", kind_of(parts[p].kind)->type, parts[p].unit,
                         when, parts[p].meaning);
            snprintf(when, sizeof when, "%s is null", parts[p].name);
            markdown_row(prefix, parts[p].name, "_skipped", kind_of("REASON")->type, "", when,
                         "why the part was not read");
        }
    }
}

/* An other record's keys: the traffic row stands for the malloc family's counts, the hooks row
 * for its three lists. A skip reason links to the list of reasons from the page's folder
 * (to_reference: "" in docs/reference/, "reference/" in docs/). */
static void markdown_event(const struct field *f, size_t n, const char *to_reference)
{
    char reason[96];
    snprintf(reason, sizeof reason, "skip reason ([the round log](%sround-log.md#skip-reasons))",
             to_reference);
    puts("| key | type | unit | present | meaning |");
    puts("|---|---|---|---|---|");
    for (size_t i = 0; i < n; i++) {
        if (strcmp(f[i].kind, "TRAFFIC") != 0) {
            const char *type = strcmp(f[i].kind, "REASON") == 0 ? reason : kind_of(f[i].kind)->type;
            markdown_row("", f[i].name, "", type, f[i].unit, f[i].when, f[i].meaning);
            continue;
        }
        /* the round record's counts, over the record's own span */
        for (size_t t = 0; t < COUNT(traffic); t++) {
            char meaning[256];
            const char *cut = strstr(traffic[t].meaning, " during the round");
            int len = cut ? (int)(cut - traffic[t].meaning) : (int)strlen(traffic[t].meaning);
            snprintf(meaning, sizeof meaning, "%.*s, since the start", len, traffic[t].meaning);
            markdown_row("", traffic[t].name, "", kind_of(traffic[t].kind)->type, traffic[t].unit,
                         f[i].when, meaning);
        }
    }
}

/* Why a diagnosis has no verdict or no forecast. */
static void markdown_diag_reasons(void)
{
    puts("| reason | meaning |");
    puts("|---|---|");
    for (size_t i = 0; i < COUNT(diag_reasons); i++) {
        printf("| `%s` | ", diag_reasons[i].name);
        cell(diag_reasons[i].text);
        puts(" |");
    }
}

static void markdown(void)
{
    puts("<!-- Generated from policy/round_fields.def and policy/skip_reasons.def by");
    puts("     scripts/tools/roundtrim-round-fields.c (make docs); edit those, not this page. -->");
    puts("# The round log");
    puts("");
    puts("Each round a process ends writes one line of JSON to the log (`ROUNDTRIM_LOG`):");
    puts("`{\"event\":\"round\",...}`, with the keys below in this order. A key with a condition");
    puts("under \"present\" is written only then. What could not be measured is `null`, or left");
    puts("out, with a `*_skipped` key saying why (one of the skip reasons below), never a silent");
    puts("zero.");
    puts("");
    puts("## Keys");
    puts("");
    markdown_fields("", fields, COUNT(fields));
    puts("");
    puts("## The memory object");
    puts("");
    puts("`memory` holds where the process's memory is at the round's boundary, before its");
    puts("cleanup: parts of the resident set that add up to `rss`, device memory beside them.");
    puts("");
    markdown_fields("memory.", memory_fields, COUNT(memory_fields));
    puts("");
    puts("## Skip reasons");
    puts("");
    puts("The values of the `*_skipped` keys, and of the `reason` label of the metric");
    puts("`roundtrim_cleanup_skipped_total`. The alert `RoundtrimCleanupFailing` leaves out the");
    puts("reasons marked \"no\" under \"alerted\": the program did the step itself, the process");
    puts("was ending, or the cleanup policy found the step not worth it.");
    puts("");
    puts("| reason | meaning | alerted |");
    puts("|---|---|---|");
    for (size_t i = 0; i < COUNT(reasons); i++) {
        printf("| `%s` | ", reasons[i].name);
        cell(reasons[i].text);
        printf(" | %s |\n", reasons[i].flag ? "no" : "yes");
    }
    puts("");
    puts("Older versions wrote other words for some reasons; `roundtrim report` reads them as");
    puts("the reason named here:");
    puts("");
    for (size_t i = 0; i < COUNT(old_words); i++)
        printf("- `%s`: `%s`\n", old_words[i].old, old_words[i].name);
}

/* A Python string literal, cut into pieces of at most width characters (at spaces) that Python
 * joins, each on a line of its own after the first. */
static void py_string(const char *s, int indent, int width)
{
    size_t len = strlen(s);
    int first = 1;
    do {
        size_t n = len;
        if (n > (size_t)width) {
            n = (size_t)width;
            while (n > 1 && s[n - 1] != ' ')
                n--;
        }
        if (!first)
            printf("\n%*s", indent, "");
        first = 0;
        putchar('"');
        for (size_t i = 0; i < n; i++) {
            if (s[i] == '"' || s[i] == '\\')
                putchar('\\');
            putchar(s[i]);
        }
        putchar('"');
        s += n;
        len -= n;
    } while (len > 0);
}

static void python_row(const char *name, const char *suffix, const char *check, const char *unit,
                       const char *when)
{
    int n = printf("    (\"%s%s\", \"%s\", \"%s\",", name, suffix, check, unit);
    if (n + 1 + (int)strlen(when) + 4 <= 99) /* the row on one line where it fits */
        putchar(' ');
    else
        fputs("\n     ", stdout);
    py_string(when, 5, 90);
    puts("),");
}

static void python_fields(const char *prefix_doc, const char *var, const struct field *f, size_t n)
{
    printf("%s\n%s = (\n", prefix_doc, var);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(f[i].kind, "PARTS") != 0) {
            python_row(f[i].name, "", kind_of(f[i].kind)->check, f[i].unit, f[i].when);
            continue;
        }
        for (size_t p = 0; p < COUNT(parts); p++) {
            char when[96];
            snprintf(when, sizeof when, "always (null with %s_skipped)", parts[p].name);
            python_row(parts[p].name, "", kind_of(parts[p].kind)->check, parts[p].unit, when);
            snprintf(when, sizeof when, "%s is null", parts[p].name);
            python_row(parts[p].name, "_skipped", kind_of("REASON")->check, "", when);
        }
    }
    puts(")");
}

/* One entry of a Python dict of names to text: "    \"name\": \"text\",", the text cut into
 * lines of the file's width. */
static void py_dict_entry(const char *name, const char *text)
{
    int indent = 4 + (int)strlen(name) + 4;
    printf("    \"%s\": ", name);
    py_string(text, indent, 96 - indent - 3);
    puts(",");
}

/* A Python value's start after its comment ("VAR = (" or "VAR = {"), and its end and a blank
 * line. */
static void py_open(const char *comment, const char *var, char bracket)
{
    printf("%s\n%s = %c\n", comment, var, bracket);
}

static void py_close(char bracket)
{
    printf("%c\n\n", bracket);
}

/* A Python tuple of (member, kind, record or source) rows. */
static void py_triples(const char *comment, const char *var, const struct diag_input *rows,
                       size_t n)
{
    py_open(comment, var, '(');
    for (size_t i = 0; i < n; i++)
        printf("    (\"%s\", \"%s\", \"%s\"),\n", rows[i].member, rows[i].kind, rows[i].record);
    py_close(')');
}

/* The records other than the round record, by event, and the table of their keys. */
static const struct {
    const char *event;
    const struct field *fields;
    size_t count;
} record_tables[] = {
    {"start", start_fields, COUNT(start_fields)},
    {"exit", exit_fields, COUNT(exit_fields)},
    {"pressure", pressure_fields, COUNT(pressure_fields)},
    {"holders", holders_fields, COUNT(holders_fields)},
    {"diagnosis", diagnosis_fields, COUNT(diagnosis_fields)},
    {"sites", sites_fields, COUNT(sites_fields)},
};

/* A (key, check) row, indented by `indent` spaces. */
static void py_check(int indent, const char *name, const char *kind)
{
    printf("%*s(\"%s\", \"%s\"),\n", indent, "", name, kind_of(kind)->check);
}

/* Each record's keys after its header with the report's check of each: the traffic row stands
 * for the malloc family's counts. */
static void python_event_checks(void)
{
    puts("# (key, check): the keys of the records other than the round record, by event, as their");
    puts("# tables declare them, with the report's check of each value (as ROUND_FIELDS').");
    puts("EVENT_FIELDS = {");
    for (size_t t = 0; t < COUNT(record_tables); t++) {
        printf("    \"%s\": (\n", record_tables[t].event);
        for (size_t i = 0; i < record_tables[t].count; i++) {
            const struct field *f = &record_tables[t].fields[i];
            if (strcmp(f->kind, "TRAFFIC") != 0) {
                py_check(8, f->name, f->kind);
                continue;
            }
            for (size_t k = 0; k < COUNT(traffic); k++)
                py_check(8, traffic[k].name, traffic[k].kind);
        }
        puts("    ),");
    }
    puts("}");
    puts("EVENT_FIELDS[\"exec\"] = EVENT_FIELDS[\"exit\"]  # the exit record's keys");
    puts("");
    py_open("# The sites record's lists of sites, in the order it writes them.", "SITES_LISTS",
            '(');
    for (size_t i = 0; i < COUNT(sites_fields); i++)
        if (strcmp(sites_fields[i].kind, "SITES") == 0)
            printf("    \"%s\",\n", sites_fields[i].name);
    py_close(')');
    py_open("# (key, check): the keys of a site's Python frames and of its native frames.",
            "PY_FRAME_FIELDS", '(');
    for (size_t i = 0; i < COUNT(py_frame_fields); i++)
        py_check(4, py_frame_fields[i].name, py_frame_fields[i].kind);
    puts(")");
    printf("NATIVE_FRAME_FIELDS = (\n");
    for (size_t i = 0; i < COUNT(native_frame_fields); i++)
        py_check(4, native_frame_fields[i].name, native_frame_fields[i].kind);
    puts(")");
}

/* A Python dict of the rows' names to their words, after its comment, and a blank line. */
static void py_dict(const char *comment, const char *var, const struct named *rows, size_t n)
{
    printf("%s\n%s = {\n", comment, var);
    for (size_t i = 0; i < n; i++)
        py_dict_entry(rows[i].name, rows[i].text);
    puts("}\n");
}

/* A Python tuple of the names of the rows whose flag is set, after its comment. */
static void py_flagged(const char *comment, const char *var, const struct named *rows, size_t n)
{
    printf("%s\n%s = (\n", comment, var);
    for (size_t i = 0; i < n; i++)
        if (rows[i].flag)
            printf("    \"%s\",\n", rows[i].name);
    puts(")");
}

static void python(void)
{
    puts("\"\"\"The round record's keys, the skip reasons, what the diagnosis reads, the causes "
         "and");
    puts("findings it names and the options' defaults, as policy/round_fields.def,");
    puts("policy/skip_reasons.def, policy/diag_input.def, policy/diag_causes.def and");
    puts("policy/options.def declare them.");
    puts("Generated by "
         "scripts/tools/roundtrim-round-fields.c");
    puts("(make docs); edit those, not this file.\"\"\"");
    puts("");
    python_fields("# (key, check, unit, when): the round record's keys in the order they are "
                  "written; check is\n# the report's check of the value (number, "
                  "number_or_null, whole, text, flag, texts,\n# pid, object_or_null); when: "
                  "\"always\" or when the key is present.",
                  "ROUND_FIELDS", fields, COUNT(fields));
    puts("");
    python_fields("# The keys of the round record's \"memory\" object.", "MEMORY_FIELDS",
                  memory_fields, COUNT(memory_fields));
    puts("");
    py_open("# The round record's keys that say why something was not measured or done.",
            "SKIP_FIELDS", '(');
    for (size_t i = 0; i < COUNT(fields); i++)
        if (strcmp(fields[i].kind, "REASON") == 0 || strcmp(fields[i].kind, "STEP_REASON") == 0)
            printf("    \"%s\",\n", fields[i].name);
    py_close(')');
    py_open("# (label, key): the cleanup steps whose skip the report's actions column shows, in "
            "the\n# order they run, with the key saying why.",
            "STEP_SKIPS", '(');
    for (size_t i = 0; i < COUNT(steps); i++)
        if (steps[i].label[0])
            printf("    (\"%s\", \"%s\"),\n", steps[i].label, steps[i].skip);
    py_close(')');
    py_dict("# What each reason a step was skipped for means.", "SKIP_REASONS", reasons,
            COUNT(reasons));
    py_triples("# (member, kind, record): what the diagnosis reads of each round record, in the "
               "order\n# roundtrim-diagnose reads a sample line (policy/diag_input.def says how "
               "each is written).",
               "DIAG_INPUT", diag_inputs, COUNT(diag_inputs));
    py_triples("# (member, kind, source): the context line's fields after \"context\", in order "
               "(policy/diag_input.def\n# says where the report finds each).",
               "DIAG_CONTEXT", diag_context, COUNT(diag_context));
    py_open("# (action, member): the cleanup actions the diagnosis weighs (the keys of its "
            "recovered\n# and held objects), each with the DIAG_INPUT member that says what it "
            "gave back.",
            "DIAG_ACTIONS", '(');
    for (size_t i = 0; i < COUNT(diag_actions); i++)
        printf("    (\"%s\", \"%s\"),\n", diag_actions[i].name, diag_actions[i].given);
    py_close(')');
    py_open("# (part, resident, words): the memory parts in the round record's order, whether "
            "each\n# is part of the resident set (they add up to RSS; the others are device "
            "memory), and\n# the report's short name of it.",
            "MEM_PARTS", '(');
    for (size_t p = 0; p < COUNT(part_words); p++)
        printf("    (\"%s\", %s, \"%s\"),\n", part_words[p].name,
               part_words[p].resident ? "True" : "False", part_words[p].words);
    py_close(')');
    py_open("# The memory parts, in the order a sample's PARTS row gives them.", "DIAG_PARTS", '(');
    for (size_t p = 0; p < COUNT(parts); p++)
        printf("    \"%s\",\n", parts[p].name);
    py_close(')');
    printf("# The latest rounds a diagnosis looks at.\nDIAG_HISTORY = %d\n\n",
           ROUNDTRIM_DIAG_HISTORY);
    py_dict("# The causes of growth (the diagnosis record's cause), in the library's order, and "
            "how the report\n# names each.",
            "DIAG_CAUSES", causes, COUNT(causes));
    py_flagged("# The causes a diagnosis may give (the others are labels of the metric only).",
               "DIAG_VERDICTS", causes, COUNT(causes));
    puts("");
    py_dict("# The findings beside the cause (the diagnosis record's findings), and what each "
            "means.",
            "DIAG_FINDINGS", findings, COUNT(findings));
    py_dict("# Why a diagnosis has no verdict (cause_skipped) or no forecast (forecast_skipped).",
            "DIAG_REASONS", diag_reasons, COUNT(diag_reasons));
    py_dict("# The limits a headroom is under (mem_headroom_of, the forecast's headroom_of).",
            "HEADROOM_OF", headroom_of, COUNT(headroom_of));
    py_dict("# Which sentence on allocation sites the advice holds (advice_sites.said).",
            "SITES_SAID", sites_said, COUNT(sites_said));
    printf("# The fewest measured rounds a diagnosis needs.\nDIAG_MIN_ROUNDS = %d\n\n",
           ROUNDTRIM_DIAG_MIN_ROUNDS);
    printf("# The pressure record's levels: a warning, and the cleanup the pressure started.\n"
           "PRESSURE_WARN = \"%s\"\nPRESSURE_CLEAN = \"%s\"\n\n",
           RT_PRESSURE_LEVEL_WARN, RT_PRESSURE_LEVEL_CLEAN);
    printf("# The most bytes the library's longest record (a sites record) takes.\n"
           "RECORD_MAX_BYTES = %d\n\n",
           ROUNDTRIM_SITES_RECORD_MAX);
    py_open("# Words older versions wrote for a reason, and the reason's name now: the report "
            "reads\n# old logs with them.",
            "SKIP_REASON_OLD_WORDS", '{');
    for (size_t i = 0; i < COUNT(old_words); i++)
        printf("    \"%s\": \"%s\",\n", old_words[i].old, old_words[i].name);
    py_close('}');
    py_open("# The reasons that hold a due cleanup back for its cost (the rounds held back).",
            "HELD_BACK_REASONS", '(');
    for (size_t i = 0; i < COUNT(held_back); i++)
        printf("    \"%s\",\n", held_back[i]);
    py_close(')');
    py_flagged("# The reasons that are no failure: the program did the step itself, the process "
               "was\n# ending, or the cleanup policy found the step not worth it.",
               "EXPECTED_SKIP_REASONS", reasons, COUNT(reasons));
    puts("");
    py_open("# Each option's default as a variable would give it (the client role's), for a "
            "process\n# whose start record, which says every value in force, is not in the log.",
            "OPTION_DEFAULTS", '{');
    for (size_t i = 0; i < COUNT(options); i++)
        if (options[i].default_value)
            printf("    \"%s\": \"%s\",\n", options[i].name, options[i].default_value);
    py_close('}');
    python_event_checks();
}

static void prom_expected(void)
{
    const char *sep = "";
    for (size_t i = 0; i < COUNT(reasons); i++) {
        if (reasons[i].flag) {
            printf("%s%s", sep, reasons[i].name);
            sep = "|";
        }
    }
    putchar('\n');
}

/* The tables --event-keys prints, by name. */
static const struct {
    const char *name;
    const struct field *fields;
    size_t count;
    const char *to_reference; /* the page's way to docs/reference/ */
} event_tables[] = {
#define LOG_FILE(name, fields)                                                                     \
    {                                                                                              \
        name, fields, COUNT(fields), ""                                                            \
    }
#define DIAGNOSIS(name, fields)                                                                    \
    {                                                                                              \
        name, fields, COUNT(fields), "reference/"                                                  \
    }
    LOG_FILE("start", start_fields),
    LOG_FILE("setting", setting_fields),
    LOG_FILE("exit", exit_fields),
    LOG_FILE("pressure", pressure_fields),
    LOG_FILE("holders", holders_fields),
    LOG_FILE("holder", holder_fields),
    DIAGNOSIS("diagnosis", diagnosis_fields),
    DIAGNOSIS("forecast", forecast_fields),
    DIAGNOSIS("advice-sites", advice_sites_fields),
    DIAGNOSIS("sites", sites_fields),
    DIAGNOSIS("site", site_fields),
    DIAGNOSIS("py-frame", py_frame_fields),
    DIAGNOSIS("native-frame", native_frame_fields),
#undef LOG_FILE
#undef DIAGNOSIS
};

static int event_keys(const char *name)
{
    if (strcmp(name, "diagnosis-reasons") == 0) {
        markdown_diag_reasons();
        return 1;
    }
    for (size_t i = 0; i < COUNT(event_tables); i++)
        if (strcmp(name, event_tables[i].name) == 0) {
            markdown_event(event_tables[i].fields, event_tables[i].count,
                           event_tables[i].to_reference);
            return 1;
        }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--markdown") == 0)
        markdown();
    else if (argc == 2 && strcmp(argv[1], "--python") == 0)
        python();
    else if (argc == 2 && strcmp(argv[1], "--prom-expected") == 0)
        prom_expected();
    else if (!(argc == 3 && strcmp(argv[1], "--event-keys") == 0 && event_keys(argv[2]))) {
        fprintf(stderr, "usage: %s --markdown | --python | --prom-expected | --event-keys NAME\n",
                argv[0]);
        fputs("NAME: diagnosis-reasons", stderr);
        for (size_t i = 0; i < COUNT(event_tables); i++)
            fprintf(stderr, ", %s", event_tables[i].name);
        fputc('\n', stderr);
        return 2;
    }
    return ferror(stdout) || fflush(stdout) ? 1 : 0;
}
