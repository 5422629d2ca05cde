#include "runtime/python/frames.h"

#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "policy/skip_reason.h"
#include "runtime/core/hash.h"
#include "runtime/python/code_origin.h"

/* Where the fields the stack walk reads sit in one CPython minor version (x86-64 and other LP64
 * targets, a release build with the GIL), taken from that version's internal headers:
 * pycore_pystate.h/cpython/pystate.h (the thread state), pycore_frame.h (_PyInterpreterFrame),
 * cpython/code.h (the code object), cpython/unicodeobject.h (str). */
struct frames_layout {
    int minor;
    size_t tstate_frame; /* thread state -> current frame, or -> its _PyCFrame (3.11, 3.12) */
    bool via_cframe;
    size_t cframe_frame; /* _PyCFrame -> current frame */
    size_t frame_code;   /* f_code, f_executable from 3.13 */
    size_t frame_previous;
    size_t frame_instr; /* prev_instr (the instruction last started), instr_ptr from 3.13 */
    size_t frame_owner;
    int owner_cstack; /* the interpreter's own entry frames (3.12 on); -1 when none */
    size_t code_filename;
    size_t code_qualname;
    size_t code_firsttraceable; /* int: first instruction a tracer may see */
    size_t code_adaptive;       /* the instructions, inline in the code object */
    size_t str_ascii_size;      /* sizeof(PyASCIIObject): ASCII characters follow */
    size_t str_compact_size;    /* sizeof(PyCompactUnicodeObject): other kinds follow */
    /* The attached thread state is a thread-local (_Py_tss_tstate, 3.12 on): whatever it holds
     * is the calling thread's own. Before, it is one global for the whole runtime. */
    bool attached_per_thread;
    /* From 3.13, _PyRuntime starts with _Py_DebugOffsets, the interpreter's own statement of
     * its layout for out-of-process debuggers: where in it the fields above are stated. */
    size_t debug_tstate_frame, debug_frame_previous, debug_frame_code, debug_frame_instr,
        debug_frame_owner, debug_code_filename, debug_code_qualname, debug_code_adaptive,
        debug_str_ascii_size;
};

static const struct frames_layout layouts[] = {
    {.minor = 11,
     .tstate_frame = 56,
     .via_cframe = true,
     .cframe_frame = 8,
     .frame_code = 32,
     .frame_previous = 48,
     .frame_instr = 56,
     .frame_owner = 69,
     .owner_cstack = -1,
     .code_filename = 112,
     .code_qualname = 128,
     .code_firsttraceable = 168,
     .code_adaptive = 184,
     .str_ascii_size = 48,
     .str_compact_size = 72},
    {.minor = 12,
     .tstate_frame = 56,
     .via_cframe = true,
     .cframe_frame = 0,
     .frame_code = 0,
     .frame_previous = 8,
     .frame_instr = 56,
     .frame_owner = 70,
     .owner_cstack = 3,
     .code_filename = 112,
     .code_qualname = 128,
     .code_firsttraceable = 176,
     .code_adaptive = 192,
     .str_ascii_size = 40,
     .str_compact_size = 56,
     .attached_per_thread = true},
    {.minor = 13,
     .tstate_frame = 72,
     .via_cframe = false,
     .frame_code = 0,
     .frame_previous = 8,
     .frame_instr = 56,
     .frame_owner = 70,
     .owner_cstack = 3,
     .code_filename = 112,
     .code_qualname = 128,
     .code_firsttraceable = 184,
     .code_adaptive = 200,
     .str_ascii_size = 40,
     .str_compact_size = 56,
     .attached_per_thread = true,
     .debug_tstate_frame = 184,
     .debug_frame_previous = 232,
     .debug_frame_code = 240,
     .debug_frame_instr = 248,
     .debug_frame_owner = 264,
     .debug_code_filename = 280,
     .debug_code_qualname = 296,
     .debug_code_adaptive = 344,
     .debug_str_ascii_size = 560},
};

#define OB_TYPE             8  /* PyObject: refcount, then the type */
#define TP_BASICSIZE        32 /* PyTypeObject: after the header and tp_name */
#define OB_SIZE             16 /* PyVarObject: the code object's length in code units */
#define CODE_UNIT           2  /* sizeof(_Py_CODEUNIT) */
#define OWNER_GENERATOR     1  /* FRAME_OWNED_BY_GENERATOR, the same in 3.11 to 3.13 */
#define STR_LENGTH          16 /* PyASCIIObject: length in code points */
#define STR_STATE           32 /* PyASCIIObject: interned:2, kind:3, compact:1, ascii:1, ... */
#define DEBUG_VERSION       8  /* _Py_DebugOffsets: PY_VERSION_HEX */
#define DEBUG_FREE_THREADED 16
/* Frames walked past (entry frames, frames being set up) before giving up: a bound against a
 * corrupt chain, far above what a real stack holds between two Python frames. */
#define WALK_LIMIT 4096

static struct {
    const struct frames_layout *layout;
    void *(*attached)(void);    /* the attached thread state (see attached_per_thread), or NULL */
    void *(*this_thread)(void); /* the calling thread's own thread state, attached or not */
    int (*is_initialized)(void);
    int (*is_finalizing)(void);
    int (*addr2line)(const void *code, int byte_offset);
    const void *code_type;
    const void *str_type;
} fr;
static enum roundtrim_skip why_not; /* RT_SKIP_NONE before any interpreter was found: no_python */
static bool ready;                  /* fr is filled in; published with release order */

static const void *load_ptr(const void *base, size_t off)
{
    const void *p;
    memcpy(&p, (const char *)base + off, sizeof p);
    return p;
}

static uint64_t load_u64(const void *base, size_t off)
{
    uint64_t v;
    memcpy(&v, (const char *)base + off, sizeof v);
    return v;
}

/* A pointer to a live object is word-aligned and far from NULL; anything else is not followed. */
static bool plausible(const void *p)
{
    return (uintptr_t)p >= 4096 && ((uintptr_t)p & (sizeof(void *) - 1)) == 0;
}

static bool is_code(const void *o)
{
    return plausible(o) && load_ptr(o, OB_TYPE) == fr.code_type;
}

/* Whether 3.13's _Py_DebugOffsets agrees with the table (a patch release that moved a field
 * would not); sets why_not when it does not or the build has no GIL. */
static bool debug_offsets_agree(const struct frames_layout *l, int minor)
{
    const char *rt = dlsym(RTLD_DEFAULT, "_PyRuntime");
    if (!rt || memcmp(rt, "xdebugpy", 8) != 0) {
        why_not = RT_SKIP_python_layout;
        return false;
    }
    if (load_u64(rt, DEBUG_FREE_THREADED)) {
        why_not = RT_SKIP_free_threaded;
        return false;
    }
    uint64_t hex = load_u64(rt, DEBUG_VERSION);
    const struct {
        size_t at;
        size_t want;
    } checks[] = {
        {l->debug_tstate_frame, l->tstate_frame},     {l->debug_frame_previous, l->frame_previous},
        {l->debug_frame_code, l->frame_code},         {l->debug_frame_instr, l->frame_instr},
        {l->debug_frame_owner, l->frame_owner},       {l->debug_code_filename, l->code_filename},
        {l->debug_code_qualname, l->code_qualname},   {l->debug_code_adaptive, l->code_adaptive},
        {l->debug_str_ascii_size, l->str_ascii_size},
    };
    bool same = (hex >> 24) == 3 && ((hex >> 16) & 0xff) == (uint64_t)minor;
    for (size_t i = 0; same && i < sizeof checks / sizeof checks[0]; i++)
        same = load_u64(rt, checks[i].at) == checks[i].want;
    if (!same)
        why_not = RT_SKIP_python_layout;
    return same;
}

static const struct frames_layout *layout_for(int major, int minor)
{
    for (size_t i = 0; major == 3 && i < sizeof layouts / sizeof layouts[0]; i++)
        if (layouts[i].minor == minor)
            return &layouts[i];
    return NULL;
}

void roundtrim_python_frames_init(const struct roundtrim_py_api *api)
{
    if (__atomic_load_n(&ready, __ATOMIC_ACQUIRE))
        return;
    if (!api->GetVersion) {
        why_not = RT_SKIP_no_python;
        return;
    }
    const struct frames_layout *l = layout_for(api->major, api->minor);
    if (!l) {
        why_not = RT_SKIP_python_version;
        return;
    }
    if (l->debug_tstate_frame && !debug_offsets_agree(l, api->minor))
        return;
    fr.addr2line = (int (*)(const void *, int))dlsym(RTLD_DEFAULT, "PyCode_Addr2Line");
    fr.code_type = api->Code_Type ? api->Code_Type : dlsym(RTLD_DEFAULT, "PyCode_Type");
    fr.str_type = api->Unicode_Type ? api->Unicode_Type : dlsym(RTLD_DEFAULT, "PyUnicode_Type");
    const void *type_type = api->Type_Type ? api->Type_Type : dlsym(RTLD_DEFAULT, "PyType_Type");
    fr.attached = api->ThreadState_Unchecked;
    fr.this_thread = api->GILState_GetThisThreadState;
    fr.is_initialized = api->IsInitialized;
    fr.is_finalizing = api->IsFinalizing;
    if (!fr.addr2line || !fr.code_type || !fr.str_type || !type_type || !fr.attached ||
        !fr.this_thread || !fr.is_initialized || !fr.is_finalizing) {
        why_not = RT_SKIP_python_api;
        return;
    }
    /* Static type objects are laid out at build time: in a build whose object header differs
     * (no GIL, traced references) the type pointer is not where this one reads it. */
    if (load_ptr(fr.code_type, OB_TYPE) != type_type ||
        load_ptr(fr.str_type, OB_TYPE) != type_type) {
        why_not = dlsym(RTLD_DEFAULT, "_Py_MergeZeroLocalRefcount") ? RT_SKIP_free_threaded
                                                                    : RT_SKIP_python_layout;
        return;
    }
    /* The types state their objects' sizes: a code object's fixed part ends where its
     * instructions start, and a str's where the non-compact form's data pointer follows the
     * compact header. A release that moved those is refused, not misread. */
    if ((size_t)load_ptr(fr.code_type, TP_BASICSIZE) != l->code_adaptive ||
        (size_t)load_ptr(fr.str_type, TP_BASICSIZE) != l->str_compact_size + sizeof(void *)) {
        why_not = RT_SKIP_python_layout;
        return;
    }
    fr.layout = l;
    why_not = RT_SKIP_NONE;
    __atomic_store_n(&ready, true, __ATOMIC_RELEASE);
}

enum roundtrim_skip roundtrim_python_frames_unavailable(void)
{
    if (__atomic_load_n(&ready, __ATOMIC_ACQUIRE))
        return RT_SKIP_NONE;
    return why_not ? why_not : RT_SKIP_no_python;
}

static const void *current_frame(const struct frames_layout *l, const void *tstate)
{
    const void *p = load_ptr(tstate, l->tstate_frame);
    if (!l->via_cframe || !plausible(p))
        return p;
    return load_ptr(p, l->cframe_frame);
}

/* The line a frame (whose code object was checked) executes now; < 0 when its instruction has
 * none. */
static int frame_line(const struct frames_layout *l, const char *frame)
{
    const char *code = load_ptr(frame, l->frame_code);
    const char *first = code + l->code_adaptive;
    const char *instr = load_ptr(frame, l->frame_instr);
    intptr_t units = (intptr_t)load_ptr(code, OB_SIZE);
    ptrdiff_t offset = instr - first;
    return offset >= 0 && offset < units * CODE_UNIT && offset <= INT32_MAX
               ? fr.addr2line(code, (int)offset)
               : -1;
}

/* Reads one frame into `out`; false for the frames CPython itself hides from tracebacks: the
 * interpreter's entry frames and frames whose set-up has not reached the first traceable
 * instruction (their locals and cells are still being filled in). */
static bool read_frame(const struct frames_layout *l, const char *frame,
                       struct roundtrim_py_frame *out, bool want_line)
{
    const char *code = load_ptr(frame, l->frame_code);
    if (!is_code(code))
        return false;
    int owner = frame[l->frame_owner];
    if (owner == l->owner_cstack)
        return false;
    const char *first = code + l->code_adaptive;
    const char *instr = load_ptr(frame, l->frame_instr);
    int traceable;
    memcpy(&traceable, code + l->code_firsttraceable, sizeof traceable);
    if (owner != OWNER_GENERATOR && instr < first + (ptrdiff_t)traceable * CODE_UNIT)
        return false;
    uint64_t names =
        roundtrim_hash_mix(ROUNDTRIM_HASH_START, (uintptr_t)load_ptr(code, l->code_filename));
    names = roundtrim_hash_mix(names, (uintptr_t)load_ptr(code, l->code_qualname));
    out->code = code;
    out->names_key = (uint32_t)(names >> 32);
    out->line = want_line ? frame_line(l, frame) : -1;
    return true;
}

/* The calling thread's own thread state, attached or not: the one CPython keeps for it in
 * thread-specific data (PyGILState_GetThisThreadState: pthread_getspecific, no lock). From 3.12 the
 * attached state is a thread-local too, and the one to read when the thread has several. */
static const void *own_thread_state(const struct frames_layout *l, const void *attached)
{
    if (l->attached_per_thread && attached)
        return attached;
    return fr.this_thread();
}

/* Whether the interpreter still owns its thread states. From the start of finalization, the
 * states of threads other than the finalizing one are freed (daemon threads running C code
 * with the GIL released keep running meanwhile); _finalizing stays set until a new
 * Py_Initialize. */
static bool interpreter_running(void)
{
    return fr.is_initialized() && !fr.is_finalizing();
}

/* Adds the frame just read into out[*n] to the frames a sample keeps (see
 * roundtrim_python_stack_kept); *program_seen: a frame of the program's own is kept. */
static void keep_frame(const struct frames_layout *l, const char *frame,
                       struct roundtrim_py_frame *out, int *n, bool *program_seen)
{
    struct roundtrim_py_frame *f = &out[*n];
    bool program = roundtrim_python_code_is_program(f->code, f->names_key);
    if (*n > 0 && !program && *program_seen)
        return; /* library code between the program's frames */
    if (*n > 0 && program && !*program_seen) {
        out[1] = *f; /* the library frames kept so far give way to the program's */
        f = &out[1];
        *n = 1;
    }
    for (int i = 0; program && i < *n; i++)
        if (out[i].code == f->code)
            return; /* recursion: its innermost frame stands for it */
    *program_seen = *program_seen || program;
    f->line = frame_line(l, frame);
    (*n)++;
}

/* The walk behind both stack readers: every frame, or the frames a sample keeps. */
static int walk_stack(struct roundtrim_py_frame *out, int max, bool kept)
{
    if (max <= 0 || !__atomic_load_n(&ready, __ATOMIC_ACQUIRE))
        return 0;
    const struct frames_layout *l = fr.layout;
    const void *attached = fr.attached();
    const void *tstate = own_thread_state(l, attached);
    if (!tstate)
        return 0;
    /* A thread that released the GIL (a C extension, an operator of PyTorch or NumPy, a ctypes
     * call) still owns its frames: they stay as they are until it takes the GIL back, and only
     * this thread could change them. What it must not outlive is its thread state itself,
     * freed by a finalization on another thread. */
    bool detached = tstate != attached;
    if (detached && !interpreter_running())
        return 0;
    const char *frame = current_frame(l, tstate);
    int n = 0;
    bool program_seen = false;
    for (int walked = 0; walked < WALK_LIMIT && plausible(frame); walked++) {
        /* Kept frames: past a full list, only as long as no program frame was found. */
        if (n == max && (!kept || program_seen))
            break;
        struct roundtrim_py_frame f;
        if (read_frame(l, frame, &f, !kept)) {
            if (!kept) {
                out[n++] = f;
            } else if (n < max || roundtrim_python_code_is_program(f.code, f.names_key)) {
                if (n == max) /* a program frame past a full list of library frames */
                    n = max - 1;
                out[n] = f;
                keep_frame(l, frame, out, &n, &program_seen);
            }
        }
        frame = load_ptr(frame, l->frame_previous);
    }
    /* A finalization that began during the walk may have freed what it read. */
    if (detached && !interpreter_running())
        return 0;
    return n;
}

int roundtrim_python_stack(struct roundtrim_py_frame *out, int max)
{
    return walk_stack(out, max, false);
}

int roundtrim_python_stack_kept(struct roundtrim_py_frame *out, int max)
{
    return walk_stack(out, max, true);
}

/* Appends code point `c` as UTF-8 when it fits before the terminating NUL. */
static bool put_utf8(char *out, size_t len, size_t *at, uint32_t c)
{
    char b[4];
    size_t n;
    if (c >= 0xd800 && c <= 0xdfff) /* a lone surrogate (an undecodable file name byte) */
        c = 0xfffd;
    if (c < 0x80) {
        b[0] = (char)c;
        n = 1;
    } else if (c < 0x800) {
        b[0] = (char)(0xc0 | c >> 6);
        b[1] = (char)(0x80 | (c & 0x3f));
        n = 2;
    } else if (c < 0x10000) {
        b[0] = (char)(0xe0 | c >> 12);
        b[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        b[2] = (char)(0x80 | (c & 0x3f));
        n = 3;
    } else {
        b[0] = (char)(0xf0 | (c >> 18 & 0x07));
        b[1] = (char)(0x80 | ((c >> 12) & 0x3f));
        b[2] = (char)(0x80 | ((c >> 6) & 0x3f));
        b[3] = (char)(0x80 | (c & 0x3f));
        n = 4;
    }
    if (*at + n >= len)
        return false;
    memcpy(out + *at, b, n);
    *at += n;
    return true;
}

/* Copies ASCII characters, as many as fit before the terminating NUL. */
static void copy_ascii(char *out, size_t len, const char *src, size_t n)
{
    if (n >= len)
        n = len - 1;
    memcpy(out, src, n);
    out[n] = '\0';
}

/* A str's contents as UTF-8, from the compact layouts every str created since 3.3 has (the
 * legacy non-compact form is refused). Reads at most one character per output byte. The
 * characters are read, never the UTF-8 form CPython may cache beside them: another thread may
 * be filling that cache in while a thread without the GIL reads the name. */
static bool str_to_utf8(const struct frames_layout *l, const char *s, char *out, size_t len)
{
    if (!plausible(s) || load_ptr(s, OB_TYPE) != fr.str_type)
        return false;
    intptr_t length = (intptr_t)load_ptr(s, STR_LENGTH);
    uint32_t state;
    memcpy(&state, s + STR_STATE, sizeof state);
    unsigned kind = (state >> 2) & 7;
    bool compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
    if (!compact || length < 0 || (kind != 1 && kind != 2 && kind != 4))
        return false;
    if (ascii) {
        copy_ascii(out, len, s + l->str_ascii_size, (size_t)length);
        return true;
    }
    const unsigned char *data = (const unsigned char *)s + l->str_compact_size;
    size_t at = 0;
    for (intptr_t i = 0; i < length; i++) {
        uint32_t c;
        if (kind == 1) {
            c = data[i];
        } else if (kind == 2) {
            uint16_t u;
            memcpy(&u, data + 2 * i, sizeof u);
            c = u;
        } else {
            memcpy(&c, data + 4 * i, sizeof c);
        }
        if (!put_utf8(out, len, &at, c))
            break;
    }
    out[at] = '\0';
    return true;
}

bool roundtrim_python_code_names(const void *code, char *file, size_t file_len, char *func,
                                 size_t func_len)
{
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE) || !file_len || !func_len || !is_code(code))
        return false;
    const struct frames_layout *l = fr.layout;
    return str_to_utf8(l, load_ptr(code, l->code_filename), file, file_len) &&
           str_to_utf8(l, load_ptr(code, l->code_qualname), func, func_len);
}
