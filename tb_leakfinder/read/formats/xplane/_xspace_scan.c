/* A compiled scanner of serialized XSpace profiles (tb_leakfinder/proto/xplane.proto).
 *
 * It walks the protobuf wire format directly and builds no message objects:
 * the /host:CPU plane's memory events, step markers, step-like spans and
 * group_id extents become rows, the `XLA Modules` and `Steps` lines of the
 * /device: planes become spans, and the /host:metadata plane's event metadata
 * give their `Hlo Proto` bytes. Every
 * other field is checked (bounds, wire types, UTF-8 of string fields, nesting
 * depth) but not kept, so that a file the protobuf library rejects is rejected
 * here too. Every length and varint is bounds-checked before use; declared
 * lengths never size an allocation. The scan runs without the GIL, and the
 * /host:CPU plane's events are cut into chunks that several threads scan;
 * their rows and string tables are merged back in wire order.
 *
 * Semantics follow the reference decoder (decoder.py) over protobuf:
 * the last occurrence of a scalar field wins, setting one member of a oneof
 * clears the other, a field with an unexpected wire type is an unknown field,
 * repeated map keys keep the last entry, and a message field that occurs
 * twice is merged.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

/* Field numbers: tests/test_xspace_scan.py checks them against the descriptor. */
#define XSPACE_PLANES 1
#define XSPACE_ERRORS 2
#define XSPACE_HOSTNAMES 4
#define XPLANE_NAME 2
#define XPLANE_LINES 3
#define XPLANE_EVENT_METADATA 4
#define XPLANE_STAT_METADATA 5
#define XPLANE_STATS 6
#define XLINE_NAME 2
#define XLINE_DISPLAY_NAME 11
#define XLINE_TIMESTAMP_NS 3
#define XLINE_EVENTS 4
#define XEVENT_METADATA_ID 1
#define XEVENT_OFFSET_PS 2
#define XEVENT_NUM_OCCURRENCES 5
#define XEVENT_DURATION_PS 3
#define XEVENT_STATS 4
#define XSTAT_METADATA_ID 1
#define XSTAT_DOUBLE_VALUE 2
#define XSTAT_UINT64_VALUE 3
#define XSTAT_INT64_VALUE 4
#define XSTAT_STR_VALUE 5
#define XSTAT_BYTES_VALUE 6
#define XSTAT_REF_VALUE 7
#define XEVENTMD_NAME 2
#define XEVENTMD_DISPLAY_NAME 4
#define XEVENTMD_STATS 5
#define XEVENTMD_CHILD_ID 6
#define XSTATMD_NAME 2
#define XSTATMD_DESCRIPTION 3
#define MAP_KEY 1
#define MAP_VALUE 2

/* The field numbers above by "Message.field", exposed as FIELDS for the schema test. */
static const struct { const char *name; int number; } FIELD_NUMBERS[] = {
    {"XSpace.planes", XSPACE_PLANES}, {"XSpace.errors", XSPACE_ERRORS}, {"XSpace.hostnames", XSPACE_HOSTNAMES},
    {"XPlane.name", XPLANE_NAME}, {"XPlane.lines", XPLANE_LINES}, {"XPlane.event_metadata", XPLANE_EVENT_METADATA},
    {"XPlane.stat_metadata", XPLANE_STAT_METADATA}, {"XPlane.stats", XPLANE_STATS},
    {"XLine.name", XLINE_NAME}, {"XLine.display_name", XLINE_DISPLAY_NAME}, {"XLine.timestamp_ns", XLINE_TIMESTAMP_NS},
    {"XLine.events", XLINE_EVENTS},
    {"XEvent.metadata_id", XEVENT_METADATA_ID}, {"XEvent.offset_ps", XEVENT_OFFSET_PS},
    {"XEvent.num_occurrences", XEVENT_NUM_OCCURRENCES}, {"XEvent.duration_ps", XEVENT_DURATION_PS}, {"XEvent.stats", XEVENT_STATS},
    {"XStat.metadata_id", XSTAT_METADATA_ID}, {"XStat.double_value", XSTAT_DOUBLE_VALUE}, {"XStat.uint64_value", XSTAT_UINT64_VALUE},
    {"XStat.int64_value", XSTAT_INT64_VALUE}, {"XStat.str_value", XSTAT_STR_VALUE}, {"XStat.bytes_value", XSTAT_BYTES_VALUE},
    {"XStat.ref_value", XSTAT_REF_VALUE},
    {"XEventMetadata.name", XEVENTMD_NAME}, {"XEventMetadata.display_name", XEVENTMD_DISPLAY_NAME},
    {"XEventMetadata.stats", XEVENTMD_STATS}, {"XEventMetadata.child_id", XEVENTMD_CHILD_ID},
    {"XStatMetadata.name", XSTATMD_NAME}, {"XStatMetadata.description", XSTATMD_DESCRIPTION},
};

#define WT_VARINT 0
#define WT_I64 1
#define WT_LEN 2
#define WT_SGROUP 3
#define WT_EGROUP 4
#define WT_I32 5

/* The protobuf library's default nesting limit (messages and groups). */
#define MAX_DEPTH 100

/* An event's metadata: a memory event, a host span by name (TraceContext, FunctionRun, __inference_*,
 * PjitFunction(...)), a host call (a Python function "$...", or a transfer to a device), or anything else. */
enum { KIND_ALLOC = 0, KIND_FREE = 1, KIND_NONE = 2, KIND_SPAN = 3, KIND_CALL = 4, KIND_RUNTIME = 5 };
enum { V_NONE = 0, V_DOUBLE, V_UINT64, V_INT64, V_STR, V_BYTES, V_REF };
/* Spans.source in tb_leakfinder/model/memory.py. */
enum { SPAN_HOST_ROOT = 0, SPAN_DEVICE_PROGRAM = 1, SPAN_DEVICE_STEP = 2, SPAN_HOST_CALL = 3, SPAN_HOST_RUNTIME = 4 };
/* Spans.flow_out / flow_in / program_id of a span without that stat (model/memory.py's NO_FLOW, NO_PROGRAM_ID). */
#define NO_FLOW 0
#define NO_PROGRAM_ID (-1)
/* What walk_event keeps of an event: nothing (only checked), a /host:CPU event, or a device span. */
enum { MODE_CHECK = 0, MODE_HOST = 1, MODE_DEVICE = 2 };

/* The memory-event columns and the stats that fill them (COL_*, COLUMN_SPECS, ROLE_*, ROLE_NAMES), written from
 * tb_leakfinder/read/formats/xplane/stat_spec.py and the model's EVENT_COLUMNS by tools/gen_scanner_tables.py. */
#include "_xspace_scan_tables.h"

typedef const uint8_t *ptr;

/* Events are walked forward but each one's start depends on the last one's length, which defeats the hardware
 * prefetcher: ask for the bytes a few events ahead. */
#define PREFETCH_AHEAD 1024
#define PREFETCH(p) __builtin_prefetch((p) + PREFETCH_AHEAD)

/* ---- growable memory ---------------------------------------------------- */

static int grow(void **buf, size_t *cap, size_t need, size_t item) {
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need) {
        if (n > SIZE_MAX / 2 / item) return -1;
        n *= 2;
    }
    void *p = realloc(*buf, n * item);
    if (!p) return -1;
    *buf = p;
    *cap = n;
    return 0;
}

/* The input is given back to the system in blocks of this size, the size of a transparent huge page. */
#define BIG_PAGE ((uintptr_t)2 << 20)

/* ---- memory-event column storage ---------------------------------------- */

/* The columns grow to hundreds of MB, written front to back. On Linux each is its own mapping, grown in place
 * by mremap (no copy) and marked for transparent huge pages, so that where the system allows them filling a
 * column takes one page fault per 2 MiB instead of 512; room made up front (Job.rows) is not committed
 * memory until written (MAP_NORESERVE). Elsewhere, realloc. NULL when out of memory. */
static void *column_resize(void *old, size_t old_bytes, size_t new_bytes) {
#if defined(__linux__) && defined(MREMAP_MAYMOVE)
    void *p = old ? mremap(old, old_bytes, new_bytes, MREMAP_MAYMOVE)
                  : mmap(NULL, new_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, new_bytes, MADV_HUGEPAGE); /* a failure only keeps small pages */
#endif
    return p;
#else
    (void)old_bytes;
    return realloc(old, new_bytes);
#endif
}

static void column_release(void *p, size_t bytes) {
#if defined(__linux__) && defined(MREMAP_MAYMOVE)
    if (p) munmap(p, bytes);
#else
    (void)bytes;
    free(p);
#endif
}

/* ---- int64 id -> int32 index, open addressing ----------------------------- */

#define DENSE_IDS 4096 /* ids below this (TF numbers them from 1) skip the hash table */

typedef struct {
    int32_t dense[DENSE_IDS]; /* -1: none */
    int64_t *keys;
    int32_t *vals; /* -1: empty slot */
    size_t cap, len;
} IdMap;

static size_t id_hash(int64_t k, size_t cap) { return (size_t)(((uint64_t)k * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1); }

static inline int32_t idmap_get(const IdMap *m, int64_t k) {
    if ((uint64_t)k < DENSE_IDS) return m->dense[k];
    if (!m->cap) return -1;
    for (size_t i = id_hash(k, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->vals[i] < 0) return -1;
        if (m->keys[i] == k) return m->vals[i];
    }
}

static int idmap_put(IdMap *m, int64_t k, int32_t v) {
    if ((uint64_t)k < DENSE_IDS) {
        m->dense[k] = v;
        return 0;
    }
    if ((m->len + 1) * 2 > m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 64;
        int64_t *keys = malloc(ncap * sizeof *keys);
        int32_t *vals = malloc(ncap * sizeof *vals);
        if (!keys || !vals) { free(keys); free(vals); return -1; }
        memset(vals, 0xff, ncap * sizeof *vals);
        for (size_t j = 0; j < m->cap; j++) {
            if (m->vals[j] < 0) continue;
            size_t i = id_hash(m->keys[j], ncap);
            while (vals[i] >= 0) i = (i + 1) & (ncap - 1);
            keys[i] = m->keys[j];
            vals[i] = m->vals[j];
        }
        free(m->keys); free(m->vals);
        m->keys = keys; m->vals = vals; m->cap = ncap;
    }
    size_t i = id_hash(k, m->cap);
    while (m->vals[i] >= 0 && m->keys[i] != k) i = (i + 1) & (m->cap - 1);
    if (m->vals[i] < 0) m->len++;
    m->keys[i] = k;
    m->vals[i] = v;
    return 0;
}

static void idmap_clear(IdMap *m) {
    free(m->keys); free(m->vals);
    memset(m, 0, sizeof *m);
    memset(m->dense, 0xff, sizeof m->dense);
}

/* ---- byte-string interning (owned copies), in order of first appearance ---- */

typedef struct { char *data; size_t len; } Str;
typedef struct {
    Str *items;
    size_t len, cap;
    int32_t *slots; /* -1: empty */
    size_t nslots;
} Intern;

static uint64_t bytes_hash(const void *p, size_t n) {
    const uint8_t *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* Index of (tag, data) in `t`, added if new; -1 when out of memory. tag < 0: none. */
static int32_t intern(Intern *t, int tag, const void *data, size_t len) {
    size_t total = len + (tag >= 0);
    if ((t->len + 1) * 2 > t->nslots) {
        size_t n = t->nslots ? t->nslots * 2 : 64;
        int32_t *slots = malloc(n * sizeof *slots);
        if (!slots) return -1;
        memset(slots, 0xff, n * sizeof *slots);
        for (size_t j = 0; j < t->len; j++) {
            size_t i = bytes_hash(t->items[j].data, t->items[j].len) & (n - 1);
            while (slots[i] >= 0) i = (i + 1) & (n - 1);
            slots[i] = (int32_t)j;
        }
        free(t->slots);
        t->slots = slots;
        t->nslots = n;
    }
    char small[64];
    char *key = total <= sizeof small ? small : malloc(total ? total : 1);
    if (!key) return -1;
    if (tag >= 0) key[0] = (char)tag;
    if (len) memcpy(key + (tag >= 0), data, len);
    size_t i = bytes_hash(key, total) & (t->nslots - 1);
    for (; t->slots[i] >= 0; i = (i + 1) & (t->nslots - 1)) {
        Str *s = &t->items[t->slots[i]];
        if (s->len == total && memcmp(s->data, key, total) == 0) {
            if (key != small) free(key);
            return t->slots[i];
        }
    }
    if (t->len >= INT32_MAX || grow((void **)&t->items, &t->cap, t->len + 1, sizeof(Str)) < 0) {
        if (key != small) free(key);
        return -1;
    }
    char *own = key;
    if (key == small) {
        own = malloc(total ? total : 1);
        if (!own) return -1;
        memcpy(own, small, total);
    }
    t->items[t->len] = (Str){own, total};
    t->slots[i] = (int32_t)t->len;
    return (int32_t)t->len++;
}

static void intern_free(Intern *t) {
    for (size_t j = 0; j < t->len; j++) free(t->items[j].data);
    free(t->items); free(t->slots);
    memset(t, 0, sizeof *t);
}

/* ---- output ---------------------------------------------------------------- */

/* Memory-event columns: col[COL_*] holds COLUMN_SPECS[COL_*].size bytes per row. A borrowed one is a window of
 * rows in another's storage, which it never resizes or releases: outgrown, it moves to storage of its own. */
typedef struct {
    void *col[NCOLS];
    size_t len, cap;
    int borrowed;
} Columns;
#define COL(c, k, type) ((type *)(c)->col[k])

typedef struct { int64_t step, start, end; } StepRow;
typedef struct { int64_t group, start, end; } GroupRow;
/* Laid out as xspace.py's SPAN_ROW dtype. */
typedef struct { int64_t start, end; int32_t name, device; int8_t source, root, pad[2]; int32_t line; int64_t flow_out, flow_in, program_id; } SpanRow;
/* The rows one chunk of a line gave, placed in time by the line's timestamp once all lines are known.
 * Only /host:CPU lines (host = 1) set the time base and the profile's end. */
typedef struct { int64_t ts, max_end; size_t ev_first, ev_n, st_first, st_n, sp_first, sp_n, gr_first, gr_n; int host; } LineFix;
/* A run of one line's event fields [p, end), scanned as a unit by one worker; `line` is the line's position
 * among the /host:CPU plane's lines (its thread), which the spans found in it carry; `rows` the memory events
 * among them whose metadata_id comes first, as profilers write it: the rows it gives but in files of other shapes. */
typedef struct { ptr p, end; int64_t ts; int32_t line; size_t rows; } Chunk;

typedef struct { ptr name; size_t name_len; int role; int32_t str_index, alloc_index; } StatMeta;
/* An event metadata: its kind (KIND_*) and, once a span used it, its index in Scan.span_names. */
typedef struct { ptr name; size_t name_len; int kind; int32_t span_index; } EventMeta;
/* One XStat: the last value given (kind V_*), and its metadata id. */
typedef struct { int kind; uint64_t v; ptr data; size_t len; int64_t mid; } Stat;

typedef struct {
    int64_t key;
    ptr name; size_t name_len;
    ptr hlo; size_t hlo_len; int has_hlo;
    int pid_kind; uint64_t pid;
} MetaEntry;

typedef struct {
    ptr base, limit; /* the input's bytes */
    const char *err;
    size_t err_at;
    int oom;
    /* per plane */
    IdMap stat_ids; StatMeta *stats; size_t nstats, capstats;
    int8_t stat_roles[DENSE_IDS]; /* the role of each dense stat id (ROLE_NONE: none), one load per stat */
    IdMap event_ids; EventMeta *events; size_t nevents, capevents;
    int device;       /* the plane's index in device_planes, -1 for others */
    int span_source;  /* while a device line is walked: its SPAN_DEVICE_* */
    /* outputs */
    Columns c;
    StepRow *steps; size_t nsteps, capsteps;
    SpanRow *spans; size_t nspans, capspans;
    GroupRow *groups; size_t ngroups, capgroups;
    LineFix *lines; size_t nlines, caplines;
    Intern strings, allocators, span_names;
    int last_id_tag; uint64_t last_id; int32_t last_id_index; /* the last integer memory id interned (tag 0: none) */
    Intern device_planes;
    MetaEntry *meta; size_t nmeta, capmeta;
    Stat *scratch; size_t capscratch; /* one event's stats */
    Chunk *chunks; size_t nchunks, capchunks;
    size_t chunk_bytes;
    int threads;
    int drop; /* each scanned chunk's whole BIG_PAGE blocks are given back, see scan() */
    ptr drop_from; int32_t drop_line; /* where the next drop may start: after this worker's last one in the line */
    int has_cpu;
    size_t num_planes;
    size_t max_planes; /* past this many planes none is walked: num_planes says max_planes + 1 (0: no limit) */
    int64_t end_ps;
    int64_t time_base_ns; /* the timestamp_ns all times are placed from (see place_lines) */
} Scan;

#define FAIL(s, at, msg) do { if (!(s)->err) { (s)->err = (msg); (s)->err_at = (size_t)((at) - (s)->base); } return -1; } while (0)
#define NOMEM(s) do { (s)->oom = 1; FAIL(s, (s)->base, "out of memory"); } while (0)

/* ---- wire format ------------------------------------------------------------ */

static inline __attribute__((always_inline)) int read_varint(Scan *s, ptr *pp, ptr end, uint64_t *out) {
    ptr p = *pp;
    if (p < end && *p < 0x80) { *out = *p; *pp = p + 1; return 0; }
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (p >= end) FAIL(s, p, "truncated varint");
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) { *out = v; *pp = p; return 0; }
    }
    FAIL(s, *pp, "varint longer than 10 bytes");
}

typedef struct {
    uint32_t field, wt;
    uint64_t v;      /* varint, fixed64 or fixed32 value */
    ptr data;        /* WT_LEN payload */
    size_t len;
} Field;

static int skip_group(Scan *s, ptr *pp, ptr end, uint32_t field, int depth);

/* Reads the next field of a message body, skipping groups. 1: a field, 0: end of body, -1: error. */
static inline __attribute__((always_inline)) int next_field(Scan *s, ptr *pp, ptr end, int depth, Field *f) {
    if (*pp >= end) return 0;
    ptr at = *pp;
    uint64_t tag = *at;
    if (tag < 0x80 && tag >= 8) { /* one-byte tag */
        *pp = at + 1;
    } else if (read_varint(s, pp, end, &tag) < 0) {
        return -1;
    }
    if (tag > UINT32_MAX || (tag >> 3) == 0) FAIL(s, at, "invalid field tag");
    f->field = (uint32_t)(tag >> 3);
    f->wt = (uint32_t)(tag & 7);
    switch (f->wt) {
    case WT_VARINT:
        return read_varint(s, pp, end, &f->v) < 0 ? -1 : 1;
    case WT_I64:
        if (end - *pp < 8) FAIL(s, *pp, "truncated fixed64");
        memcpy(&f->v, *pp, 8); /* little-endian hosts only, see setup.py */
        *pp += 8;
        return 1;
    case WT_I32: {
        uint32_t v32;
        if (end - *pp < 4) FAIL(s, *pp, "truncated fixed32");
        memcpy(&v32, *pp, 4);
        f->v = v32;
        *pp += 4;
        return 1;
    }
    case WT_LEN: {
        uint64_t n;
        if (read_varint(s, pp, end, &n) < 0) return -1;
        if (n > (uint64_t)(end - *pp)) FAIL(s, at, "length past the end of its message");
        f->data = *pp;
        f->len = (size_t)n;
        *pp += n;
        return 1;
    }
    case WT_SGROUP:
        return skip_group(s, pp, end, f->field, depth + 1) < 0 ? -1 : 1;
    default:
        FAIL(s, at, "invalid wire type");
    }
}

static int skip_group(Scan *s, ptr *pp, ptr end, uint32_t field, int depth) {
    if (depth > MAX_DEPTH) FAIL(s, *pp, "nested too deeply");
    for (;;) {
        if (*pp >= end) FAIL(s, *pp, "unterminated group");
        ptr at = *pp;
        uint64_t tag;
        if (read_varint(s, pp, end, &tag) < 0) return -1;
        if ((tag & 7) == WT_EGROUP && tag <= UINT32_MAX) {
            if ((tag >> 3) != field) FAIL(s, at, "mismatched end of group");
            return 0;
        }
        *pp = at;
        Field f = {0};
        if (next_field(s, pp, end, depth, &f) < 0) return -1;
    }
}

/* Strict UTF-8, as protobuf requires of string fields. */
static int utf8_ok(ptr p, size_t n) {
    ptr end = p + n;
    while (p < end) {
        uint8_t b = *p;
        if (b < 0x80) { p++; continue; }
        size_t k;
        uint32_t cp, min;
        if ((b & 0xe0) == 0xc0) { k = 1; cp = b & 0x1f; min = 0x80; }
        else if ((b & 0xf0) == 0xe0) { k = 2; cp = b & 0x0f; min = 0x800; }
        else if ((b & 0xf8) == 0xf0) { k = 3; cp = b & 0x07; min = 0x10000; }
        else return 0;
        if ((size_t)(end - p) <= k) return 0;
        for (size_t i = 1; i <= k; i++) {
            if ((p[i] & 0xc0) != 0x80) return 0;
            cp = (cp << 6) | (p[i] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
        p += k + 1;
    }
    return 1;
}

static inline int check_string(Scan *s, const Field *f) {
    if (f->wt == WT_LEN && !utf8_ok(f->data, f->len)) FAIL(s, f->data, "string field is not valid UTF-8");
    return 0;
}

/* ---- messages ---------------------------------------------------------------- */


/* A stat value's kind by its one-byte tag, for read_stat_common: V_NONE for any other tag. */
static const int8_t STAT_VALUE_KIND[256] = {
    [XSTAT_DOUBLE_VALUE << 3 | WT_I64] = V_DOUBLE,
    [XSTAT_UINT64_VALUE << 3 | WT_VARINT] = V_UINT64,
    [XSTAT_INT64_VALUE << 3 | WT_VARINT] = V_INT64,
    [XSTAT_REF_VALUE << 3 | WT_VARINT] = V_REF,
};
/* For a varint of n <= 8 bytes read eight bytes at once: the mask of its bytes, and the continuation bits
 * it must have (every byte's but the last). */
static const uint64_t VARINT_BYTES[9] = {0, 0xff, 0xffff, 0xffffff, 0xffffffff, 0xffffffffffull, 0xffffffffffffull,
                                         0xffffffffffffffull, ~0ull};
static const uint64_t VARINT_CONTINUES[9] = {0, 0, 0x80, 0x8080, 0x808080, 0x80808080ull, 0x8080808080ull,
                                             0x808080808080ull, 0x80808080808080ull};

/* The 7-bit groups of eight varint bytes (little-endian in w) packed into one 56-bit value. */
static inline __attribute__((always_inline)) uint64_t varint_groups(uint64_t w) {
    w &= 0x7f7f7f7f7f7f7f7full;
    w = ((w & 0x7f007f007f007f00ull) >> 1) | (w & 0x007f007f007f007full);
    w = ((w & 0x3fff00003fff0000ull) >> 2) | (w & 0x00003fff00003fffull);
    return ((w & 0x0fffffff00000000ull) >> 4) | (w & 0x000000000fffffffull);
}

/* The value [p, end) of a common-shape stat under a tag of `kind` (V_NONE: another tag), at least one byte. */
static inline __attribute__((always_inline)) int stat_value(ptr p, ptr end, ptr limit, int kind, Stat *st) {
    size_t n = (size_t)(end - p);
    st->kind = kind;
    if (kind == V_DOUBLE) {
        if (n != 8) return 0;
        memcpy(&st->v, p, 8);
        return 1;
    }
    if (kind == V_NONE || n > 10) return 0;
    if (n == 1 && p[0] < 0x80) { /* ids, refs, small ints */
        st->v = p[0];
        return 1;
    }
    if (n <= 8 && limit - p >= 8) { /* eight bytes at once: continuation bits checked, 7-bit groups packed */
        uint64_t w;
        memcpy(&w, p, 8);
        w &= VARINT_BYTES[n];
        if ((w & 0x8080808080808080ull) != VARINT_CONTINUES[n]) return 0;
        st->v = varint_groups(w);
        return 1;
    }
    if (n > 8 && limit - p >= 8) { /* 9 or 10 bytes (negative ints, hashes): eight at once, then the rest */
        uint64_t w;
        memcpy(&w, p, 8);
        if ((w & 0x8080808080808080ull) != 0x8080808080808080ull) return 0;
        w = varint_groups(w);
        if (n == 9) {
            if (p[8] & 0x80) return 0;
            st->v = w | (uint64_t)p[8] << 56;
        } else {
            if (!(p[8] & 0x80) || (p[9] & 0x80)) return 0;
            st->v = w | (uint64_t)(p[8] & 0x7f) << 56 | (uint64_t)p[9] << 63;
        }
        return 1;
    }
    uint64_t v = 0;
    size_t i = 0;
    for (; i + 1 < n; i++) { /* the varint must end exactly at the end of the stat: every byte before continues */
        if (!(p[i] & 0x80)) return 0;
        v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
    }
    if (p[i] & 0x80) return 0;
    st->v = v | (uint64_t)p[i] << (7 * i);
    return 1;
}

/* The shape profilers write: a one-byte metadata_id, then one varint or double value, and nothing else. */
static inline __attribute__((always_inline)) int read_stat_common(ptr p, ptr end, ptr limit, Stat *st) {
    if (end - p < 4 || p[0] != (XSTAT_METADATA_ID << 3 | WT_VARINT) || p[1] >= 0x80) return 0;
    st->mid = p[1];
    return stat_value(p + 3, end, limit, STAT_VALUE_KIND[p[2]], st);
}

static int read_stat(Scan *s, ptr p, ptr end, int depth, Stat *st) {
    if (depth > MAX_DEPTH) FAIL(s, p, "nested too deeply");
    if (read_stat_common(p, end, s->limit, st)) return 0;
    Field f = {0};
    int r;
    st->kind = V_NONE;
    st->mid = 0;
    while ((r = next_field(s, &p, end, depth, &f)) > 0) {
        switch (f.field) {
        case XSTAT_METADATA_ID: if (f.wt == WT_VARINT) st->mid = (int64_t)f.v; break;
        case XSTAT_DOUBLE_VALUE: if (f.wt == WT_I64) { st->kind = V_DOUBLE; st->v = f.v; } break;
        case XSTAT_UINT64_VALUE: if (f.wt == WT_VARINT) { st->kind = V_UINT64; st->v = f.v; } break;
        case XSTAT_INT64_VALUE: if (f.wt == WT_VARINT) { st->kind = V_INT64; st->v = f.v; } break;
        case XSTAT_REF_VALUE: if (f.wt == WT_VARINT) { st->kind = V_REF; st->v = f.v; } break;
        case XSTAT_STR_VALUE:
            if (f.wt == WT_LEN) {
                if (check_string(s, &f) < 0) return -1;
                st->kind = V_STR; st->data = f.data; st->len = f.len;
            }
            break;
        case XSTAT_BYTES_VALUE: if (f.wt == WT_LEN) { st->kind = V_BYTES; st->data = f.data; st->len = f.len; } break;
        default: break;
        }
    }
    return r;
}

static inline const StatMeta *stat_meta(const Scan *s, int64_t id) {
    int32_t i = idmap_get(&s->stat_ids, id);
    return i < 0 ? NULL : &s->stats[i];
}

/* The stat metadata a ref_value names (NULL when none: its value is then ""). */
static inline int stat_role(const Scan *s, int64_t id) {
    if ((uint64_t)id < DENSE_IDS) return s->stat_roles[id];
    const StatMeta *m = stat_meta(s, id);
    return m ? m->role : ROLE_NONE;
}

static inline StatMeta *ref_meta(Scan *s, uint64_t ref) {
    if (ref > INT64_MAX) return NULL; /* map keys are int64 */
    int32_t i = idmap_get(&s->stat_ids, (int64_t)ref);
    return i < 0 ? NULL : &s->stats[i];
}

/* A map entry {int64 key = 1; message value = 2}: the key and the value bodies, in order.
 * An entry holding any other field is dropped, as protobuf (upb) drops it from the map. */
typedef struct { int64_t key; ptr values[4]; size_t lens[4]; size_t n; ptr entry, entry_end; int other; } MapEntry;

static int read_map_entry(Scan *s, ptr p, ptr end, int depth, MapEntry *e) {
    if (depth > MAX_DEPTH) FAIL(s, p, "nested too deeply");
    Field f = {0};
    int r;
    e->key = 0;
    e->n = 0;
    e->entry = p;
    e->entry_end = end;
    e->other = 0;
    while ((r = next_field(s, &p, end, depth, &f)) > 0) {
        if (f.field == MAP_KEY && f.wt == WT_VARINT) e->key = (int64_t)f.v;
        else if (f.field == MAP_VALUE && f.wt == WT_LEN && e->n < 4) {
            e->values[e->n] = f.data;
            e->lens[e->n++] = f.len;
        } else if (f.field == MAP_VALUE && f.wt == WT_LEN) {
            e->n = 5; /* rare: walk the entry again, see for_each_value */
        } else {
            e->other = 1;
        }
    }
    return r;
}

/* Calls fn on each value body of an entry; a value given more than 4 times is walked again from the entry. */
typedef int (*ValueFn)(Scan *s, ptr p, ptr end, int depth, void *ctx);

static int for_each_value(Scan *s, const MapEntry *e, int depth, ValueFn fn, void *ctx) {
    if (e->n <= 4) {
        for (size_t i = 0; i < e->n; i++)
            if (fn(s, e->values[i], e->values[i] + e->lens[i], depth + 1, ctx) < 0) return -1;
        return 0;
    }
    ptr p = e->entry;
    Field f = {0};
    int r;
    while ((r = next_field(s, &p, e->entry_end, depth, &f)) > 0)
        if (f.field == MAP_VALUE && f.wt == WT_LEN && fn(s, f.data, f.data + f.len, depth + 1, ctx) < 0) return -1;
    return r;
}

/* XStatMetadata: the last name given. */
typedef struct { ptr name; size_t len; } NameCtx;

static int stat_md_value(Scan *s, ptr p, ptr end, int depth, void *vctx) {
    if (depth > MAX_DEPTH) FAIL(s, p, "nested too deeply");
    NameCtx *ctx = vctx;
    Field f = {0};
    int r;
    while ((r = next_field(s, &p, end, depth, &f)) > 0) {
        if ((f.field == XSTATMD_NAME || f.field == XSTATMD_DESCRIPTION) && check_string(s, &f) < 0) return -1;
        if (f.field == XSTATMD_NAME && f.wt == WT_LEN) { ctx->name = f.data; ctx->len = f.len; }
    }
    return r;
}

static int role_of(ptr name, size_t len) {
    for (size_t i = 0; i < sizeof ROLE_NAMES / sizeof ROLE_NAMES[0]; i++)
        if (strlen(ROLE_NAMES[i].name) == len && memcmp(ROLE_NAMES[i].name, name, len) == 0) return ROLE_NAMES[i].role;
    return ROLE_NONE;
}

static int add_stat_metadata(Scan *s, ptr p, ptr end, int depth) {
    MapEntry e;
    NameCtx name = {(ptr) "", 0};
    if (read_map_entry(s, p, end, depth, &e) < 0 || for_each_value(s, &e, depth, stat_md_value, &name) < 0) return -1;
    if (e.other) return 0;
    int32_t i = idmap_get(&s->stat_ids, e.key);
    if (i < 0) {
        if (s->nstats >= INT32_MAX || grow((void **)&s->stats, &s->capstats, s->nstats + 1, sizeof(StatMeta)) < 0) NOMEM(s);
        i = (int32_t)s->nstats++;
        if (idmap_put(&s->stat_ids, e.key, i) < 0) NOMEM(s);
    }
    s->stats[i] = (StatMeta){name.name, name.len, role_of(name.name, name.len), -1, -1};
    if ((uint64_t)e.key < DENSE_IDS) s->stat_roles[e.key] = (int8_t)s->stats[i].role;
    return 0;
}

/* XEventMetadata: the last name, and (for /host:metadata) its `Hlo Proto` and `program_id` stats. */
typedef struct { NameCtx name; MetaEntry *meta; } EventMdCtx;

static int event_md_value(Scan *s, ptr p, ptr end, int depth, void *vctx) {
    if (depth > MAX_DEPTH) FAIL(s, p, "nested too deeply");
    EventMdCtx *ctx = vctx;
    Field f = {0};
    int r;
    while ((r = next_field(s, &p, end, depth, &f)) > 0) {
        switch (f.field) {
        case XEVENTMD_NAME:
            if (check_string(s, &f) < 0) return -1;
            if (f.wt == WT_LEN) { ctx->name.name = f.data; ctx->name.len = f.len; }
            break;
        case XEVENTMD_DISPLAY_NAME:
            if (check_string(s, &f) < 0) return -1;
            break;
        case XEVENTMD_STATS:
            if (f.wt == WT_LEN) {
                Stat st;
                if (read_stat(s, f.data, f.data + f.len, depth + 1, &st) < 0) return -1;
                const StatMeta *m = ctx->meta ? stat_meta(s, st.mid) : NULL;
                if (m && m->role == ROLE_HLO && st.kind == V_BYTES) {
                    ctx->meta->hlo = st.data; ctx->meta->hlo_len = st.len; ctx->meta->has_hlo = 1;
                } else if (m && m->role == ROLE_PROGRAM_ID) {
                    int integral = st.kind == V_INT64 || st.kind == V_UINT64;
                    ctx->meta->pid_kind = integral ? st.kind : V_NONE;
                    ctx->meta->pid = st.v;
                }
            }
            break;
        case XEVENTMD_CHILD_ID:
            if (f.wt == WT_LEN) { /* packed: a whole number of varints */
                ptr q = f.data, qend = f.data + f.len;
                uint64_t v;
                while (q < qend)
                    if (read_varint(s, &q, qend, &v) < 0) return -1;
            }
            break;
        default: break;
        }
    }
    return r;
}

static int starts_with(ptr name, size_t len, const char *prefix) {
    size_t n = strlen(prefix);
    return len >= n && memcmp(name, prefix, n) == 0;
}

static int contains(ptr name, size_t len, const char *part) {
    size_t n = strlen(part);
    for (size_t i = 0; n <= len && i <= len - n; i++)
        if (memcmp(name + i, part, n) == 0) return 1;
    return 0;
}

/* As model/memory.py's is_transfer_name: a runtime call that copies host data to a device. */
static int is_transfer(ptr name, size_t len) {
    return (len == 9 && memcmp(name, "DevicePut", 9) == 0) || contains(name, len, "BufferFromHostBuffer") ||
           contains(name, len, "LinearizeHostBuffer") || contains(name, len, "TransferToDevice") ||
           contains(name, len, "TransferLiteralToDevice");
}

/* As model/memory.py's is_runtime_name: a runtime call of a program execution. */
static int is_runtime(ptr name, size_t len) {
    static const char *const parts[] = {"LoadedExecutable::Execute", "::EnqueueExecution", "Build buffer allocations",
                                        ":XLA GPU module", "ExecutePrepare", "AllocateOutputBufferWithInputReuse",
                                        "tpu::System::Execute", "DoEnqueueProgram"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (contains(name, len, parts[i])) return 1;
    return 0;
}

/* As decoder.is_host_span_name for the spans, decoder.is_host_call_name for the calls, is_runtime for the
 * runtime calls. */
static int event_kind(ptr name, size_t len) {
    if (len == 16 && memcmp(name, "MemoryAllocation", 16) == 0) return KIND_ALLOC;
    if (len == 18 && memcmp(name, "MemoryDeallocation", 18) == 0) return KIND_FREE;
    if ((len == 12 && memcmp(name, "TraceContext", 12) == 0) || (len == 11 && memcmp(name, "FunctionRun", 11) == 0) ||
        starts_with(name, len, "__inference_") || (starts_with(name, len, "PjitFunction(") && name[len - 1] == ')'))
        return KIND_SPAN;
    if ((len > 1 && name[0] == '$') || is_transfer(name, len)) return KIND_CALL;
    return is_runtime(name, len) ? KIND_RUNTIME : KIND_NONE;
}

static int add_event_metadata(Scan *s, ptr p, ptr end, int depth, int keep_hlo) {
    MapEntry e;
    MetaEntry meta = {0};
    EventMdCtx ctx = {{(ptr) "", 0}, keep_hlo ? &meta : NULL};
    if (read_map_entry(s, p, end, depth, &e) < 0 || for_each_value(s, &e, depth, event_md_value, &ctx) < 0) return -1;
    if (e.other) return 0;
    if (keep_hlo) {
        meta.key = e.key;
        meta.name = ctx.name.name;
        meta.name_len = ctx.name.len;
        if (grow((void **)&s->meta, &s->capmeta, s->nmeta + 1, sizeof(MetaEntry)) < 0) NOMEM(s);
        s->meta[s->nmeta++] = meta;
        return 0;
    }
    int32_t i = idmap_get(&s->event_ids, e.key);
    if (i < 0) {
        if (s->nevents >= INT32_MAX || grow((void **)&s->events, &s->capevents, s->nevents + 1, sizeof(EventMeta)) < 0) NOMEM(s);
        i = (int32_t)s->nevents++;
        if (idmap_put(&s->event_ids, e.key, i) < 0) NOMEM(s);
    }
    s->events[i] = (EventMeta){ctx.name.name, ctx.name.len, event_kind(ctx.name.name, ctx.name.len), -1};
    return 0;
}

/* ---- events ---------------------------------------------------------------------- */

static int columns_reserve(Columns *c, size_t need);

/* Columns of its own for a borrowed window's rows, with room for n. */
static int leave_window(Columns *c, size_t n) {
    Columns own = {0};
    if (columns_reserve(&own, n) < 0) return -1;
    for (int k = 0; k < NCOLS && c->len; k++) memcpy(own.col[k], c->col[k], c->len * COLUMN_SPECS[k].size);
    own.len = c->len;
    *c = own;
    return 0;
}

static int columns_reserve(Columns *c, size_t need) {
    if (need <= c->cap) return 0;
    size_t n = c->cap ? c->cap * 2 : 4096;
    if (n < need) n = need;
    if (c->borrowed) return leave_window(c, n);
    for (int k = 0; k < NCOLS; k++) {
        void *q = column_resize(c->col[k], c->cap * COLUMN_SPECS[k].size, n * COLUMN_SPECS[k].size);
        if (!q) { /* back to one capacity for all, which column_release needs (shrinking does not fail) */
            for (int j = 0; j < k; j++) {
                size_t size = COLUMN_SPECS[j].size;
                if (c->cap) {
                    c->col[j] = column_resize(c->col[j], n * size, c->cap * size);
                } else {
                    column_release(c->col[j], n * size);
                    c->col[j] = NULL;
                }
            }
            return -1;
        }
        c->col[k] = q;
    }
    c->cap = n;
    return 0;
}

static int reserve_rows(Scan *s, size_t need) { return columns_reserve(&s->c, need); }

/* The interned allocator key of an event's memory id, as XProf's converter spells it: a kind byte and the
 * value, turned into the id in Python. An integer id stat (index_on_host, device_ordinal) is its value,
 * other kinds 0 (XProf's IntValue); an allocator_name is its string, other kinds "" (StrOrRefValue). */
static int32_t allocator_key(Scan *s, const Stat *st, int role) {
    if (!st) return intern(&s->allocators, 'S', "", 0);
    if (role == ROLE_INT_ID) { /* every event of a device names it: the last one is kept at hand */
        int tag = st->kind == V_UINT64 ? 'U' : 'I';
        uint64_t v = st->kind == V_UINT64 || st->kind == V_INT64 ? st->v : 0;
        if (s->last_id_tag == tag && s->last_id == v) return s->last_id_index;
        int32_t i = intern(&s->allocators, tag, &v, 8);
        if (i >= 0) { s->last_id_tag = tag; s->last_id = v; s->last_id_index = i; }
        return i;
    }
    if (st->kind == V_STR) return intern(&s->allocators, 'S', st->data, st->len);
    if (st->kind != V_REF) return intern(&s->allocators, 'S', "", 0);
    StatMeta *m = ref_meta(s, st->v);
    if (!m) return intern(&s->allocators, 'S', "", 0);
    if (m->alloc_index < 0) m->alloc_index = intern(&s->allocators, 'S', m->name, m->name_len);
    return m->alloc_index;
}

static int32_t string_index(Scan *s, const Stat *st) {
    if (st->kind == V_STR) return intern(&s->strings, -1, st->data, st->len);
    StatMeta *m = ref_meta(s, st->v);
    if (!m) return 0; /* "" */
    if (m->str_index < 0) m->str_index = intern(&s->strings, -1, m->name, m->name_len);
    return m->str_index;
}

static int add_group(Scan *s, int64_t group, int64_t start, int64_t end) {
    if (grow((void **)&s->groups, &s->capgroups, s->ngroups + 1, sizeof(GroupRow)) < 0) NOMEM(s);
    s->groups[s->ngroups++] = (GroupRow){group, start, end};
    return 0;
}

/* What any other /host:CPU event's stats give: a step marker if it has an integral `step_num` (the first one
 * counts), a root if its last `_r` is a nonzero integer, a group's part if it has an integral `group_id`
 * (the last one counts), and its span's flow ids and program id (the last integral `_p`, `_c`, `program_id`).
 * A device span's stats give the same. */
typedef struct { int has_step, root, grouped; int64_t step, group, flow_out, flow_in, program_id; } HostRow;
#define HOST_ROW_INIT {0, 0, 0, 0, 0, NO_FLOW, NO_FLOW, NO_PROGRAM_ID}

/* A span named by event metadata `ei` (-1: none, named ""), with the flows and program id of `h`. */
static int add_span(Scan *s, int32_t ei, int source, int root, int64_t start, int64_t end, const HostRow *h) {
    int32_t name;
    if (ei < 0) name = intern(&s->span_names, -1, "", 0);
    else if ((name = s->events[ei].span_index) < 0)
        name = s->events[ei].span_index = intern(&s->span_names, -1, s->events[ei].name, s->events[ei].name_len);
    if (name < 0 || grow((void **)&s->spans, &s->capspans, s->nspans + 1, sizeof(SpanRow)) < 0) NOMEM(s);
    int host = source == SPAN_HOST_ROOT || source == SPAN_HOST_CALL || source == SPAN_HOST_RUNTIME;
    s->spans[s->nspans++] = (SpanRow){start, end, name, host ? -1 : s->device, (int8_t)source, (int8_t)root, {0}, -1,
                                      h->flow_out, h->flow_in, h->program_id};
    return 0;
}

/* What a memory event's stats give, as they are read. */
typedef struct {
    int64_t ints[NINTS];
    int32_t strs[NSTRS], dtype;
    int grouped, id_role;
    uint64_t addr;
    double frag;
    /* The last stat naming the allocator, of any kind (as XProf); id_role ROLE_NONE: none. Its fields one by one:
     * a whole Stat copied per event was a `rep movs`, 6% of a scan. */
    int id_kind;
    uint64_t id_v;
    ptr id_data;
    size_t id_len;
} MemRow;

static inline void mem_row_init(MemRow *m) {
    int_defaults(m->ints);
    str_defaults(m->strs);
    m->dtype = DEFAULT_DTYPE;
    m->grouped = 0;
    m->id_role = ROLE_NONE;
    m->id_data = NULL;
    m->id_len = 0;
    m->addr = DEFAULT_ADDR;
    m->frag = DEFAULT_FRAGMENTATION;
}

static inline __attribute__((always_inline)) int mem_stat(Scan *s, MemRow *m, const Stat *st, int role) {
    if (role == ROLE_ALLOCATOR || role == ROLE_INT_ID) {
        m->id_kind = st->kind;
        m->id_v = st->v;
        if (st->kind == V_STR) {
            m->id_data = st->data;
            m->id_len = st->len;
        }
        m->id_role = role;
        return 0;
    }
    int integral = st->kind == V_INT64 || st->kind == V_UINT64;
    if (role >= FIRST_INT_ROLE && role < FIRST_INT_ROLE + NINTS) {
        if (integral) {
            m->ints[role - FIRST_INT_ROLE] = (int64_t)st->v;
            if (role == ROLE_GROUP_ID) m->grouped = 1;
        }
    } else if (role == ROLE_ADDR) {
        if (integral) m->addr = st->v;
    } else if (role == ROLE_FRAGMENTATION) {
        if (st->kind == V_DOUBLE) memcpy(&m->frag, &st->v, 8);
        else if (st->kind == V_INT64) m->frag = (double)(int64_t)st->v;
        else if (st->kind == V_UINT64) m->frag = (double)st->v;
    } else if (role == ROLE_DTYPE) {
        if (integral) m->dtype = (int32_t)st->v;
    } else if (role >= FIRST_STR_ROLE && (st->kind == V_STR || st->kind == V_REF)) {
        if ((m->strs[role - FIRST_STR_ROLE] = string_index(s, st)) < 0) NOMEM(s);
    }
    return 0;
}

static int mem_row_commit(Scan *s, const MemRow *m, int kind, int64_t start, int64_t end) {
    if (s->c.len >= s->c.cap && reserve_rows(s, s->c.len + 1) < 0) NOMEM(s);
    Columns *c = &s->c;
    size_t row = c->len;
    Stat id = {m->id_kind, m->id_v, m->id_data, m->id_len, 0};
    int32_t alloc = allocator_key(s, m->id_role == ROLE_NONE ? NULL : &id, m->id_role);
    if (alloc < 0) NOMEM(s);
    COL(c, COL_TIME_PS, int64_t)[row] = start;
    COL(c, COL_KIND, int8_t)[row] = (int8_t)kind;
    COL(c, COL_ALLOCATOR, int32_t)[row] = alloc;
    COL(c, COL_ADDR, uint64_t)[row] = m->addr;
    for (int i = 0; i < NINTS; i++) COL(c, FIRST_INT_COL + i, int64_t)[row] = m->ints[i];
    COL(c, COL_DTYPE, int32_t)[row] = m->dtype;
    COL(c, COL_FRAGMENTATION, double)[row] = m->frag;
    for (int i = 0; i < NSTRS; i++) COL(c, FIRST_STR_COL + i, int32_t)[row] = m->strs[i];
    c->len++;
    return m->grouped ? add_group(s, m->ints[COL_GROUP_ID - FIRST_INT_COL], start, end) : 0;
}

static inline __attribute__((always_inline)) void host_stat(HostRow *h, const Stat *st, int role) {
    if (role < FIRST_HOST_ROLE || role > LAST_HOST_ROLE) return; /* cheap exit for most stats */
    int integral = st->kind == V_INT64 || st->kind == V_UINT64;
    if (role == ROLE_STEP && integral && !h->has_step) {
        h->has_step = 1;
        h->step = (int64_t)st->v;
    } else if (role == ROLE_ROOT) {
        h->root = integral && st->v != 0;
    } else if (role == ROLE_GROUP_ID && integral) {
        h->grouped = 1;
        h->group = (int64_t)st->v;
    } else if (role == ROLE_FLOW_OUT && integral) {
        h->flow_out = (int64_t)st->v;
    } else if (role == ROLE_FLOW_IN && integral) {
        h->flow_in = (int64_t)st->v;
    } else if (role == ROLE_PROGRAM_ID && integral) {
        h->program_id = (int64_t)st->v;
    }
}

/* A span too if its name is one (KIND_SPAN) or it is a root; a host call (KIND_CALL) when it is neither; else a
 * runtime call (KIND_RUNTIME, or any event with a program id). */
static int host_row_commit(Scan *s, const HostRow *h, int32_t ei, int64_t start, int64_t end) {
    if (h->has_step) {
        if (grow((void **)&s->steps, &s->capsteps, s->nsteps + 1, sizeof(StepRow)) < 0) NOMEM(s);
        s->steps[s->nsteps++] = (StepRow){h->step, start, end};
    }
    int kind = ei >= 0 ? s->events[ei].kind : KIND_NONE;
    if (h->root || kind == KIND_SPAN) {
        if (add_span(s, ei, SPAN_HOST_ROOT, h->root, start, end, h) < 0) return -1;
    } else if (kind == KIND_CALL) {
        if (add_span(s, ei, SPAN_HOST_CALL, 0, start, end, h) < 0) return -1;
    } else if (kind == KIND_RUNTIME || h->program_id != NO_PROGRAM_ID) {
        if (add_span(s, ei, SPAN_HOST_RUNTIME, 0, start, end, h) < 0) return -1;
    }
    return h->grouped ? add_group(s, h->group, start, end) : 0;
}

typedef struct { int64_t max_end; size_t n; } LineAcc;

static inline void line_acc(LineAcc *acc, int64_t event_end) {
    if (acc->n++ == 0 || event_end > acc->max_end) acc->max_end = event_end;
}

/* A varint of the shape profilers write (none past `end`, at most 10 bytes); 0 for any other, with no error. */
static inline __attribute__((always_inline)) int plain_varint(ptr *pp, ptr end, uint64_t *out) {
    ptr p = *pp;
    uint64_t v = 0;
    for (int i = 0; i < 10 && p < end; i++) {
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) { *out = v; *pp = p; return 1; }
    }
    return 0;
}

/* A /host:CPU event of the shape profilers write, in one pass: its metadata_id first (once), then offset,
 * duration and stats of the common shape under one-byte tags and lengths, each stat used as it is read.
 * 1: done; 0: another shape, which walk_event's general path decodes from the start (what this pass did is
 * then only interning, which the general path repeats to the same effect); -1: out of memory. */
static inline __attribute__((always_inline)) int host_event_one_pass(Scan *s, ptr p, ptr end, LineAcc *acc) {
    uint64_t mid;
    if (p >= end || p[0] != (XEVENT_METADATA_ID << 3 | WT_VARINT)) return 0;
    p++;
    if (!plain_varint(&p, end, &mid) || mid > INT64_MAX) return 0;
    int32_t ei = idmap_get(&s->event_ids, (int64_t)mid);
    int kind = ei < 0 ? KIND_NONE : s->events[ei].kind, memory = kind == KIND_ALLOC || kind == KIND_FREE;
    int64_t offset = 0, dur = 0;
    MemRow m;
    HostRow h = HOST_ROW_INIT;
    Stat st = {V_NONE, 0, NULL, 0, 0}; /* the common shape has no string: data and len stay unset */
    if (memory) mem_row_init(&m);
    while (p < end) {
        uint8_t tag = p[0];
        uint32_t head; /* a stats field's tag and one-byte length, then its stat's metadata_id tag and one-byte id */
        if (s->limit - p >= 4 && (memcpy(&head, p, 4), (head & 0x80ff80ffu) == (XEVENT_STATS << 3 | WT_LEN | (XSTAT_METADATA_ID << 3 | WT_VARINT) << 16))) {
            size_t len = p[1];
            if (len < 4 || len + 2 > (size_t)(end - p)) return 0;
            ptr value = p + 5;
            st.mid = p[3];
            p += 2 + len;
            if (!stat_value(value, p, s->limit, STAT_VALUE_KIND[value[-1]], &st)) return 0;
            int role = s->stat_roles[st.mid]; /* the common shape's id is one byte: dense */
            if (memory) {
                if (mem_stat(s, &m, &st, role) < 0) return -1;
            } else {
                host_stat(&h, &st, role);
            }
            continue;
        }
        uint64_t v;
        p++;
        if (!plain_varint(&p, end, &v)) return 0;
        if (tag == (XEVENT_OFFSET_PS << 3 | WT_VARINT)) offset = (int64_t)v;
        else if (tag == (XEVENT_DURATION_PS << 3 | WT_VARINT)) dur = (int64_t)v;
        else if (tag == (XEVENT_NUM_OCCURRENCES << 3 | WT_VARINT)) offset = 0; /* the other member of the oneof */
        else return 0;
    }
    int64_t event_end = (int64_t)((uint64_t)offset + (uint64_t)dur);
    line_acc(acc, event_end);
    int rc = memory ? mem_row_commit(s, &m, kind, offset, event_end) : host_row_commit(s, &h, ei, offset, event_end);
    return rc < 0 ? -1 : 1;
}

/* One XEvent. Its stats are parsed into s->scratch and used once its metadata_id is known (which may come
 * last, or twice); the common shape takes host_event_one_pass instead. */
static int walk_event(Scan *s, ptr p, ptr end, int depth, int mode, LineAcc *acc) {
    if (depth > MAX_DEPTH) FAIL(s, p, "nested too deeply");
    if (mode == MODE_HOST && depth < MAX_DEPTH) {
        int done = host_event_one_pass(s, p, end, acc);
        if (done) return done < 0 ? -1 : 0;
    }
    int64_t mid = 0, offset = 0, dur = 0;
    size_t nstats = 0;
    Field f = {0};
    int r;
    for (;;) {
        /* Most fields are stats of the common shape under a one-byte tag and length: decoded inline. */
        if (depth < MAX_DEPTH && end - p >= 2 && p[0] == (XEVENT_STATS << 3 | WT_LEN) && p[1] < 0x80 && p[1] <= end - p - 2) {
            ptr data = p + 2;
            p = data + p[1];
            if (nstats == s->capscratch && grow((void **)&s->scratch, &s->capscratch, nstats + 1, sizeof(Stat)) < 0) NOMEM(s);
            if (!read_stat_common(data, p, s->limit, &s->scratch[nstats]) && read_stat(s, data, p, depth + 1, &s->scratch[nstats]) < 0)
                return -1;
            nstats++;
            continue;
        }
        if ((r = next_field(s, &p, end, depth, &f)) <= 0) break;
        if (f.field == XEVENT_STATS && f.wt == WT_LEN) {
            if (nstats == s->capscratch && grow((void **)&s->scratch, &s->capscratch, nstats + 1, sizeof(Stat)) < 0) NOMEM(s);
            if (read_stat(s, f.data, f.data + f.len, depth + 1, &s->scratch[nstats]) < 0) return -1;
            nstats++;
        } else if (f.wt == WT_VARINT) {
            if (f.field == XEVENT_METADATA_ID) mid = (int64_t)f.v;
            else if (f.field == XEVENT_OFFSET_PS) offset = (int64_t)f.v;
            else if (f.field == XEVENT_NUM_OCCURRENCES) offset = 0; /* the other member of the oneof */
            else if (f.field == XEVENT_DURATION_PS) dur = (int64_t)f.v;
        }
    }
    if (r < 0) return -1;
    int64_t event_end = (int64_t)((uint64_t)offset + (uint64_t)dur);
    line_acc(acc, event_end);
    if (mode == MODE_CHECK) return 0;
    int32_t ei = idmap_get(&s->event_ids, mid);
    HostRow h = HOST_ROW_INIT;
    int kind = ei < 0 ? KIND_NONE : s->events[ei].kind;
    if (mode == MODE_DEVICE || (kind != KIND_ALLOC && kind != KIND_FREE))
        for (size_t i = 0; i < nstats; i++) host_stat(&h, &s->scratch[i], stat_role(s, s->scratch[i].mid));
    if (mode == MODE_DEVICE) return add_span(s, ei, s->span_source, 0, offset, event_end, &h);
    if (kind == KIND_ALLOC || kind == KIND_FREE) {
        MemRow m;
        mem_row_init(&m);
        for (size_t i = 0; i < nstats; i++)
            if (mem_stat(s, &m, &s->scratch[i], stat_role(s, s->scratch[i].mid)) < 0) return -1;
        return mem_row_commit(s, &m, kind, offset, event_end);
    }
    return host_row_commit(s, &h, ei, offset, event_end);
}

static int push_line(Scan *s, LineFix l) {
    if (grow((void **)&s->lines, &s->caplines, s->nlines + 1, sizeof(LineFix)) < 0) NOMEM(s);
    s->lines[s->nlines++] = l;
    return 0;
}

/* A line of a plane other than /host:CPU: checked. On a device plane, an `XLA Modules` or `Steps` line's
 * events are spans: its name and timestamp are read first, as they may come after its events. */
static int check_line(Scan *s, ptr p, ptr end, int depth) {
    if (depth > MAX_DEPTH) FAIL(s, p, "nested too deeply");
    LineAcc acc = {0, 0};
    Field f = {0};
    int r, mode = MODE_CHECK;
    int64_t ts = 0;
    if (s->device >= 0) {
        ptr q = p, name = (ptr) "";
        size_t name_len = 0;
        while ((r = next_field(s, &q, end, depth, &f)) > 0) {
            if (f.field == XLINE_NAME && f.wt == WT_LEN) { name = f.data; name_len = f.len; }
            else if (f.field == XLINE_TIMESTAMP_NS && f.wt == WT_VARINT) ts = (int64_t)f.v;
        }
        if (r < 0) return -1;
        if (name_len == 11 && memcmp(name, "XLA Modules", 11) == 0) { mode = MODE_DEVICE; s->span_source = SPAN_DEVICE_PROGRAM; }
        else if (name_len == 5 && memcmp(name, "Steps", 5) == 0) { mode = MODE_DEVICE; s->span_source = SPAN_DEVICE_STEP; }
    }
    size_t sp_first = s->nspans;
    while ((r = next_field(s, &p, end, depth, &f)) > 0) {
        if ((f.field == XLINE_NAME || f.field == XLINE_DISPLAY_NAME) && check_string(s, &f) < 0) return -1;
        if (f.field == XLINE_EVENTS && f.wt == WT_LEN && walk_event(s, f.data, f.data + f.len, depth + 1, mode, &acc) < 0) return -1;
    }
    if (r < 0) return -1;
    if (s->nspans == sp_first) return 0;
    return push_line(s, (LineFix){ts, 0, 0, 0, 0, 0, sp_first, s->nspans - sp_first, 0, 0, 0});
}

static int push_chunk(Scan *s, ptr p, ptr end, size_t rows) {
    if (grow((void **)&s->chunks, &s->capchunks, s->nchunks + 1, sizeof(Chunk)) < 0) NOMEM(s);
    s->chunks[s->nchunks++] = (Chunk){p, end, 0, 0, rows};
    return 0;
}

/* Whether an event's fields [p, end) open with the metadata_id of a memory event. */
static inline int opens_as_memory(const Scan *s, ptr p, ptr end) {
    uint64_t mid;
    if (p >= end || p[0] != (XEVENT_METADATA_ID << 3 | WT_VARINT)) return 0;
    p++;
    if (!plain_varint(&p, end, &mid) || mid > INT64_MAX) return 0;
    int32_t ei = idmap_get(&s->event_ids, (int64_t)mid);
    return ei >= 0 && (s->events[ei].kind == KIND_ALLOC || s->events[ei].kind == KIND_FREE);
}

/* Most fields of a line are events under a one-byte tag and a length of one or two bytes: stepped over without
 * next_field. The body of such a field within `end` (*pp moved past it, *len its length), else NULL and *pp
 * unmoved for next_field to read, errors included. */
static inline __attribute__((always_inline)) ptr short_event(ptr *pp, ptr end, size_t *len) {
    ptr p = *pp;
    if (end - p < 3 || p[0] != (XLINE_EVENTS << 3 | WT_LEN) || (p[1] >= 0x80 && p[2] >= 0x80)) return NULL;
    ptr body = p + (p[1] < 0x80 ? 2 : 3);
    size_t n = p[1] < 0x80 ? p[1] : (size_t)(p[1] & 0x7f) | (size_t)p[2] << 7;
    if (n > (size_t)(end - body)) return NULL;
    *len = n;
    *pp = body + n;
    return body;
}

/* A /host:CPU line (the `line`-th): checks its own fields and cuts its events into chunks of about s->chunk_bytes. */
static int cut_line(Scan *s, ptr p, ptr end, int depth, int32_t line) {
    if (depth > MAX_DEPTH) FAIL(s, p, "nested too deeply");
    int64_t ts = 0; /* the last timestamp_ns, wherever it is among the events */
    size_t first = s->nchunks, rows = 0;
    ptr at = p, start = NULL, last = NULL;
    Field f = {0};
    int r;
    for (;;) {
        PREFETCH(p);
        size_t len;
        ptr body = short_event(&p, end, &len);
        if (!body) {
            if ((r = next_field(s, &p, end, depth, &f)) <= 0) break;
            if (f.field == XLINE_TIMESTAMP_NS && f.wt == WT_VARINT) ts = (int64_t)f.v;
            else if ((f.field == XLINE_NAME || f.field == XLINE_DISPLAY_NAME) && check_string(s, &f) < 0) return -1;
            if (f.field == XLINE_EVENTS && f.wt == WT_LEN) {
                body = f.data;
                len = f.len;
            }
        }
        if (body) {
            if (!start) start = at;
            last = p;
            rows += opens_as_memory(s, body, body + len);
            if ((size_t)(last - start) >= s->chunk_bytes) {
                if (push_chunk(s, start, last, rows) < 0) return -1;
                start = NULL;
                rows = 0;
            }
        }
        at = p;
    }
    if (r < 0) return -1;
    if (start && push_chunk(s, start, last, rows) < 0) return -1;
    for (size_t i = first; i < s->nchunks; i++) { s->chunks[i].ts = ts; s->chunks[i].line = line; }
    return 0;
}

/* The events of one chunk (fields other than events were checked by cut_line). */
static int scan_chunk(Scan *w, const Chunk *ch, int depth) {
    LineAcc acc = {0, 0};
    size_t ev_first = w->c.len, st_first = w->nsteps, sp_first = w->nspans, gr_first = w->ngroups;
    ptr p = ch->p;
    Field f = {0};
    int r;
    for (;;) {
        PREFETCH(p);
        size_t len;
        ptr body = short_event(&p, ch->end, &len);
        if (!body) {
            if ((r = next_field(w, &p, ch->end, depth, &f)) <= 0) break;
            if (f.field != XLINE_EVENTS || f.wt != WT_LEN) continue;
            body = f.data;
            len = f.len;
        }
        if (walk_event(w, body, body + len, depth + 1, MODE_HOST, &acc) < 0) return -1;
    }
    if (r < 0) return -1;
    if (w->drop) {
        /* Nothing kept points into a line's bytes (strings are interned as copies; metadata and HLO bytes lie
         * outside the plane's lines), so the whole blocks from this worker's first chunk of the line to this
         * chunk's end may go; the edge blocks may hold another worker's chunks or the plane's metadata. */
        if (w->drop_line != ch->line || !w->drop_from) { w->drop_from = ch->p; w->drop_line = ch->line; }
        uintptr_t a = ((uintptr_t)w->drop_from + BIG_PAGE - 1) / BIG_PAGE * BIG_PAGE;
        uintptr_t b = (uintptr_t)ch->end / BIG_PAGE * BIG_PAGE;
        if (b > a) {
            madvise((void *)a, b - a, MADV_DONTNEED); /* a failure only keeps the pages */
            w->drop_from = (ptr)b;
        }
    }
    for (size_t j = sp_first; j < w->nspans; j++) w->spans[j].line = ch->line;
    for (size_t j = ev_first; j < w->c.len; j++) COL(&w->c, COL_LINE, int32_t)[j] = ch->line;
    return push_line(w, (LineFix){ch->ts, acc.max_end, ev_first, w->c.len - ev_first, st_first, w->nsteps - st_first, sp_first,
                                  w->nspans - sp_first, gr_first, w->ngroups - gr_first, 1});
}

/* ---- workers: contiguous runs of chunks, merged back in wire order ---------------------- */

#define MAX_WORKERS 16

/* rows: its chunks' rows, which its columns are made room for up front, so that they are not moved while they
 * grow (a move splits their huge pages); at: where its window starts in the storage of all jobs' rows. */
typedef struct { Scan *w; const Chunk *chunks; size_t n; int depth; int rc; size_t rows, at; } Job;

static void *run_job(void *arg) {
    Job *j = arg;
    j->rc = 0;
    reserve_rows(j->w, j->rows); /* a failure only leaves the columns to grow as they fill */
    for (size_t i = 0; i < j->n && j->rc == 0; i++) j->rc = scan_chunk(j->w, &j->chunks[i], j->depth);
    return NULL;
}

/* The outputs and per-metadata caches of a scan or worker (a worker's id maps are the main scan's). */
static void worker_free(Scan *w) {
    for (int k = 0; k < NCOLS && !w->c.borrowed; k++) column_release(w->c.col[k], w->c.cap * COLUMN_SPECS[k].size);
    free(w->steps); free(w->spans); free(w->groups); free(w->lines); free(w->stats); free(w->events); free(w->scratch);
    intern_free(&w->strings);
    intern_free(&w->allocators);
    intern_free(&w->span_names);
}

/* A worker reads the main scan's input and metadata; its outputs and per-metadata caches are its own. */
static int worker_init(Scan *w, const Scan *s) {
    memset(w, 0, sizeof *w);
    w->base = s->base;
    w->limit = s->limit;
    w->stat_ids = s->stat_ids;
    memcpy(w->stat_roles, s->stat_roles, sizeof w->stat_roles);
    w->event_ids = s->event_ids;
    w->device = s->device;
    w->drop = s->drop;
    w->nstats = w->capstats = s->nstats;
    w->stats = malloc((s->nstats ? s->nstats : 1) * sizeof(StatMeta));
    w->nevents = w->capevents = s->nevents;
    w->events = malloc((s->nevents ? s->nevents : 1) * sizeof(EventMeta));
    if (!w->stats || !w->events) return -1;
    memcpy(w->stats, s->stats, s->nstats * sizeof(StatMeta));
    memcpy(w->events, s->events, s->nevents * sizeof(EventMeta));
    return intern(&w->strings, -1, "", 0) < 0 ? -1 : 0;
}

/* Indices of `from`'s items in `to` (interned there if new); NULL when out of memory. */
static int32_t *intern_map(Intern *to, const Intern *from, int tagged) {
    int32_t *map = malloc((from->len + 1) * sizeof(int32_t));
    for (size_t j = 0; map && j < from->len; j++) {
        const Str *k = &from->items[j]; /* tagged: a kind byte, then the value */
        map[j] = tagged ? intern(to, (uint8_t)k->data[0], k->data + 1, k->len - 1) : intern(to, -1, k->data, k->len);
        if (map[j] < 0) { free(map); map = NULL; }
    }
    return map;
}

/* Appends worker w's rows to s, its string, allocator and span-name indices turned into s's. When both write in
 * windows of one storage, w's `at` rows into s's, w's rows stay there (moved down only when s's window is not
 * full) and s's window takes in w's. */
static int merge_worker(Scan *s, Scan *w, size_t at) {
    size_t base = s->c.len, n = w->c.len;
    int in_place = s->c.borrowed && w->c.borrowed;
    int32_t *smap = intern_map(&s->strings, &w->strings, 0);
    int32_t *amap = intern_map(&s->allocators, &w->allocators, 1);
    int32_t *nmap = intern_map(&s->span_names, &w->span_names, 0);
    if (!smap || !amap || !nmap || (!in_place && reserve_rows(s, base + n) < 0) ||
        grow((void **)&s->steps, &s->capsteps, s->nsteps + w->nsteps, sizeof(StepRow)) < 0 ||
        grow((void **)&s->spans, &s->capspans, s->nspans + w->nspans, sizeof(SpanRow)) < 0 ||
        grow((void **)&s->groups, &s->capgroups, s->ngroups + w->ngroups, sizeof(GroupRow)) < 0 ||
        grow((void **)&s->lines, &s->caplines, s->nlines + w->nlines, sizeof(LineFix)) < 0) {
        free(smap); free(amap); free(nmap);
        NOMEM(s);
    }
    Columns *c = &s->c, *d = &w->c;
    if (in_place) c->cap = at + d->cap;
    for (int k = 0; k < NCOLS && n; k++) {
        size_t size = COLUMN_SPECS[k].size;
        char *to = (char *)c->col[k] + base * size;
        int indices = k == COL_ALLOCATOR || (k >= FIRST_STR_COL && k < FIRST_STR_COL + NSTRS);
        if (in_place && to != d->col[k]) memmove(to, d->col[k], n * size);
        if (indices) {
            const int32_t *map = k == COL_ALLOCATOR ? amap : smap, *from = in_place ? (int32_t *)to : COL(d, k, int32_t);
            for (size_t r = 0; r < n; r++) ((int32_t *)to)[r] = map[from[r]];
        } else if (!in_place) {
            memcpy(to, d->col[k], n * size);
        }
        /* a copied column goes at once: the merge never holds two copies of all the rows */
        if (!d->borrowed) column_release(d->col[k], d->cap * size);
        d->col[k] = NULL;
    }
    c->len = base + n;
    for (size_t i = 0; i < w->nspans; i++) {
        SpanRow row = w->spans[i];
        row.name = nmap[row.name];
        s->spans[s->nspans + i] = row;
    }
    free(smap); free(amap); free(nmap);
    if (w->nsteps) memcpy(s->steps + s->nsteps, w->steps, w->nsteps * sizeof(StepRow));
    if (w->ngroups) memcpy(s->groups + s->ngroups, w->groups, w->ngroups * sizeof(GroupRow));
    for (size_t i = 0; i < w->nlines; i++) {
        LineFix l = w->lines[i];
        l.ev_first += base;
        l.st_first += s->nsteps;
        l.sp_first += s->nspans;
        l.gr_first += s->ngroups;
        s->lines[s->nlines + i] = l;
    }
    s->nsteps += w->nsteps;
    s->nspans += w->nspans;
    s->ngroups += w->ngroups;
    s->nlines += w->nlines;
    return 0;
}

/* Scans the chunks: the first run on this thread, the others on their own threads, split by bytes. Each job
 * writes its rows in its own window of one storage, its chunks' rows long, which s's columns then become: where
 * the counts hold, as in files as profilers write them, the rows are in place when the jobs end. */
static int scan_chunks(Scan *s, int depth) {
    size_t n = s->nchunks, workers = (size_t)s->threads < n ? (size_t)s->threads : n;
    if (workers > MAX_WORKERS) workers = MAX_WORKERS;
    size_t total = 0, done = 0, k = 0, from = 0;
    for (size_t i = 0; i < n; i++) total += (size_t)(s->chunks[i].end - s->chunks[i].p);
    Job jobs[MAX_WORKERS];
    pthread_t tids[MAX_WORKERS];
    int started[MAX_WORKERS] = {0}, rc = 0;
    for (size_t i = 0; i < n && k + 1 < workers; i++) {
        done += (size_t)(s->chunks[i].end - s->chunks[i].p);
        if (done * workers >= total * (k + 1)) {
            jobs[k] = (Job){NULL, s->chunks + from, i + 1 - from, depth, 0, 0, 0};
            from = i + 1;
            k++;
        }
    }
    jobs[k] = (Job){NULL, s->chunks + from, n - from, depth, 0, 0, 0};
    workers = from == n && k ? k : k + 1; /* the last cut may have taken every chunk */
    size_t rows = 0;
    for (size_t i = 0; i < workers; i++) {
        jobs[i].at = rows;
        for (size_t c = 0; c < jobs[i].n; c++) jobs[i].rows += jobs[i].chunks[c].rows;
        rows += jobs[i].rows;
    }
    jobs[0].w = s;
    if (workers == 1) {
        run_job(&jobs[0]);
        return jobs[0].rc;
    }
    Scan *extra = calloc(workers - 1, sizeof(Scan));
    if (!extra) NOMEM(s);
    size_t ready = 1;
    for (; ready < workers; ready++) {
        if (worker_init(&extra[ready - 1], s) < 0) { worker_free(&extra[ready - 1]); break; }
        jobs[ready].w = &extra[ready - 1];
    }
    if (ready < workers) { /* out of memory: no worker ran yet */
        for (size_t i = 1; i < ready; i++) worker_free(&extra[i - 1]);
        free(extra);
        NOMEM(s);
    }
    /* Without it (no rows counted, or out of memory), each job's columns are its own, copied into s's as merged. */
    Columns storage = {0};
    int windows = rows && !s->c.cap && columns_reserve(&storage, rows) == 0;
    for (size_t i = 0; i < workers && windows; i++) {
        Columns *c = &jobs[i].w->c;
        for (int k = 0; k < NCOLS; k++) c->col[k] = (char *)storage.col[k] + jobs[i].at * COLUMN_SPECS[k].size;
        c->cap = jobs[i].rows;
        c->borrowed = 1;
    }
    for (size_t i = 1; i < workers; i++) started[i] = pthread_create(&tids[i], NULL, run_job, &jobs[i]) == 0;
    run_job(&jobs[0]);
    for (size_t i = 1; i < workers; i++) {
        if (started[i]) pthread_join(tids[i], NULL);
        else run_job(&jobs[i]); /* no thread: run it here */
    }
    /* The first failure in wire order is the one reported, as a single thread would report it. */
    for (size_t i = 0; i < workers && rc == 0; i++) {
        if (jobs[i].rc == 0) continue;
        rc = -1;
        if (i > 0) { s->err = extra[i - 1].err; s->err_at = extra[i - 1].err_at; s->oom = extra[i - 1].oom; }
    }
    for (size_t i = 1; i < workers; i++) {
        if (rc == 0 && merge_worker(s, &extra[i - 1], jobs[i].at) < 0) rc = -1;
        worker_free(&extra[i - 1]);
    }
    free(extra);
    if (s->c.borrowed) { /* its window starts the storage: the storage is its own now */
        s->c.cap = storage.cap;
        s->c.borrowed = 0;
    } else {
        for (int k = 0; k < NCOLS; k++) column_release(storage.col[k], storage.cap * COLUMN_SPECS[k].size);
    }
    return rc;
}

/* ---- planes ------------------------------------------------------------------------ */

enum { PLANE_OTHER, PLANE_CPU, PLANE_METADATA, PLANE_DEVICE };

/* `device`: the plane's index in device_planes when role is PLANE_DEVICE. */
static int walk_plane(Scan *s, ptr p, ptr end, int depth, int role, int device) {
    if (depth > MAX_DEPTH) FAIL(s, p, "nested too deeply");
    idmap_clear(&s->stat_ids);
    memset(s->stat_roles, 0, sizeof s->stat_roles);
    idmap_clear(&s->event_ids);
    s->nstats = 0;
    s->nevents = 0;
    s->device = role == PLANE_DEVICE ? device : -1;
    ptr q = p;
    Field f = {0};
    int r;
    /* First the metadata tables, which the lines and /host:metadata's event metadata need. */
    while ((r = next_field(s, &q, end, depth, &f)) > 0) {
        if (f.wt != WT_LEN) continue;
        if (f.field == XPLANE_STAT_METADATA) {
            if (add_stat_metadata(s, f.data, f.data + f.len, depth + 1) < 0) return -1;
        } else if (f.field == XPLANE_EVENT_METADATA && role != PLANE_METADATA) {
            if (add_event_metadata(s, f.data, f.data + f.len, depth + 1, 0) < 0) return -1;
        } else if (f.field == XPLANE_STATS) {
            Stat st;
            if (read_stat(s, f.data, f.data + f.len, depth + 1, &st) < 0) return -1;
        } else if (f.field == XPLANE_NAME && check_string(s, &f) < 0) {
            return -1;
        }
    }
    if (r < 0) return -1;
    q = p;
    int32_t line = 0;
    while ((r = next_field(s, &q, end, depth, &f)) > 0) {
        if (f.wt != WT_LEN) continue;
        if (f.field == XPLANE_LINES) {
            int checked = role == PLANE_CPU ? cut_line(s, f.data, f.data + f.len, depth + 1, line++)
                                            : check_line(s, f.data, f.data + f.len, depth + 1);
            if (checked < 0) return -1;
        } else if (f.field == XPLANE_EVENT_METADATA && role == PLANE_METADATA) {
            if (add_event_metadata(s, f.data, f.data + f.len, depth + 1, 1) < 0) return -1;
        }
    }
    if (r < 0) return -1;
    return role == PLANE_CPU ? scan_chunks(s, depth + 1) : 0;
}

/* The last `name` field of a plane (found without walking its lines). */
static int plane_name(Scan *s, ptr p, ptr end, int depth, NameCtx *name) {
    Field f = {0};
    int r;
    name->name = (ptr) "";
    name->len = 0;
    while ((r = next_field(s, &p, end, depth, &f)) > 0)
        if (f.field == XPLANE_NAME && f.wt == WT_LEN) { name->name = f.data; name->len = f.len; }
    return r;
}

static int name_is(const NameCtx *n, const char *want) { return n->len == strlen(want) && memcmp(n->name, want, n->len) == 0; }

/* A plane's bytes, and its index in device_planes (-1: not a /device: plane). */
typedef struct { ptr p; size_t len; int32_t device; } PlaneRef;

static int scan_space(Scan *s, ptr p, ptr end) {
    PlaneRef *planes = NULL;
    size_t nplanes = 0, cap = 0;
    long *last = NULL; /* per device name: its last plane, the one read (as a dict by name keeps it) */
    ptr q = p;
    Field f = {0};
    int r;
    long cpu = -1, meta = -1;
    while ((r = next_field(s, &q, end, 0, &f)) > 0) {
        if (f.field == XSPACE_PLANES && f.wt == WT_LEN) {
            if (s->max_planes && nplanes == s->max_planes) {
                /* A file of empty planes would cost a walk per two bytes: the caller refuses it by its count. */
                s->num_planes = nplanes + 1;
                free(planes);
                return 0;
            }
            NameCtx name = {0};
            if (plane_name(s, f.data, f.data + f.len, 1, &name) < 0) goto fail;
            if (grow((void **)&planes, &cap, nplanes + 1, sizeof(PlaneRef)) < 0) goto nomem;
            int32_t device = -1;
            if (name_is(&name, "/host:CPU")) cpu = (long)nplanes;
            if (name_is(&name, "/host:metadata")) meta = (long)nplanes;
            if (starts_with(name.name, name.len, "/device:") && (device = intern(&s->device_planes, -1, name.name, name.len)) < 0)
                goto nomem;
            planes[nplanes++] = (PlaneRef){f.data, f.len, device};
        } else if ((f.field == XSPACE_ERRORS || f.field == XSPACE_HOSTNAMES) && check_string(s, &f) < 0) {
            goto fail;
        }
    }
    if (r < 0) goto fail;
    if (!(last = malloc((s->device_planes.len + 1) * sizeof(long)))) goto nomem;
    for (size_t i = 0; i < nplanes; i++)
        if (planes[i].device >= 0) last[planes[i].device] = (long)i;
    for (size_t i = 0; i < nplanes; i++) {
        int device = planes[i].device;
        int role = (long)i == cpu                        ? PLANE_CPU
                   : (long)i == meta                     ? PLANE_METADATA
                   : device >= 0 && last[device] == (long)i ? PLANE_DEVICE
                                                            : PLANE_OTHER;
        if (walk_plane(s, planes[i].p, planes[i].p + planes[i].len, 1, role, device) < 0) goto fail;
    }
    s->has_cpu = cpu >= 0;
    s->num_planes = nplanes;
    free(planes);
    free(last);
    return 0;
nomem:
    s->oom = 1;
    s->err = "out of memory";
fail:
    free(planes);
    free(last);
    return -1;
}

#define SHIFT(x, by) ((x) = (int64_t)((uint64_t)(x) + (by)))

/* Times become picoseconds from the earliest /host:CPU line that has events (0 if none), as the reference
 * decoder computes them; then a group's consecutive rows are merged (min start, max end). */
static void place_lines(Scan *s) {
    int64_t base = 0;
    int have_base = 0;
    for (size_t i = 0; i < s->nlines; i++)
        if (s->lines[i].host && (!have_base || s->lines[i].ts < base)) { base = s->lines[i].ts; have_base = 1; }
    s->time_base_ns = base;
    uint64_t end_ps = 0;
    int have_end = 0;
    int64_t *time_ps = COL(&s->c, COL_TIME_PS, int64_t);
    for (size_t i = 0; i < s->nlines; i++) {
        const LineFix *l = &s->lines[i];
        uint64_t shift = ((uint64_t)l->ts - (uint64_t)base) * 1000u;
        for (size_t j = l->ev_first; j < l->ev_first + l->ev_n; j++) SHIFT(time_ps[j], shift);
        for (size_t j = l->st_first; j < l->st_first + l->st_n; j++) { SHIFT(s->steps[j].start, shift); SHIFT(s->steps[j].end, shift); }
        for (size_t j = l->sp_first; j < l->sp_first + l->sp_n; j++) { SHIFT(s->spans[j].start, shift); SHIFT(s->spans[j].end, shift); }
        for (size_t j = l->gr_first; j < l->gr_first + l->gr_n; j++) { SHIFT(s->groups[j].start, shift); SHIFT(s->groups[j].end, shift); }
        if (!l->host) continue;
        uint64_t e = (uint64_t)l->max_end + shift;
        if (!have_end || (int64_t)e > (int64_t)end_ps) { end_ps = e; have_end = 1; }
    }
    s->end_ps = (int64_t)end_ps > 0 ? (int64_t)end_ps : 0;
    size_t n = 0;
    for (size_t j = 0; j < s->ngroups; j++) {
        GroupRow g = s->groups[j];
        if (n && s->groups[n - 1].group == g.group) {
            if (g.start < s->groups[n - 1].start) s->groups[n - 1].start = g.start;
            if (g.end > s->groups[n - 1].end) s->groups[n - 1].end = g.end;
        } else {
            s->groups[n++] = g;
        }
    }
    s->ngroups = n;
}

static void scan_free(Scan *s) {
    worker_free(s);
    intern_free(&s->device_planes);
    free(s->meta);
    free(s->chunks);
    idmap_clear(&s->stat_ids);
    memset(s->stat_roles, 0, sizeof s->stat_roles);
    idmap_clear(&s->event_ids);
}

/* ---- Python: a column owns its malloc'd buffer and exposes it to np.frombuffer ---- */

/* mapped: the buffer is a column's storage of that many bytes (column_release), else malloc'd. */
typedef struct { PyObject_HEAD void *buf; Py_ssize_t len; size_t mapped; } ColumnObject;

static int column_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    ColumnObject *c = (ColumnObject *)self;
    return PyBuffer_FillInfo(view, self, c->buf, c->len, 0, flags);
}

static void column_dealloc(PyObject *self) {
    ColumnObject *c = (ColumnObject *)self;
    if (c->mapped) column_release(c->buf, c->mapped);
    else free(c->buf);
    Py_TYPE(self)->tp_free(self);
}

static PyBufferProcs column_as_buffer = {column_getbuffer, NULL};

static PyTypeObject ColumnType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tb_leakfinder.read.formats.xplane._xspace_scan.Column",
    .tp_basicsize = sizeof(ColumnObject),
    .tp_dealloc = column_dealloc,
    .tp_as_buffer = &column_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A buffer of one memory-event column (wrap with numpy.frombuffer).",
};

/* Hands `*buf` (n items of `size` bytes; `mapped`: column storage of that many bytes, else 0) to a new Column;
 * `*buf` is then NULL. */
static PyObject *column(void **buf, size_t n, size_t size, size_t mapped) {
    ColumnObject *c = PyObject_New(ColumnObject, &ColumnType);
    if (!c) return NULL;
    c->buf = *buf;
    c->len = (Py_ssize_t)(n * size);
    c->mapped = mapped;
    *buf = NULL;
    return (PyObject *)c;
}

static PyObject *ScanError;

static PyObject *intern_list(const Intern *t) {
    PyObject *list = PyList_New((Py_ssize_t)t->len);
    for (size_t i = 0; list && i < t->len; i++) {
        PyObject *b = PyBytes_FromStringAndSize(t->items[i].data, (Py_ssize_t)t->items[i].len);
        if (!b) { Py_CLEAR(list); break; }
        PyList_SET_ITEM(list, (Py_ssize_t)i, b);
    }
    return list;
}

static PyObject *meta_list(const Scan *s) {
    PyObject *list = PyList_New((Py_ssize_t)s->nmeta);
    for (size_t i = 0; list && i < s->nmeta; i++) {
        const MetaEntry *m = &s->meta[i];
        PyObject *pid = m->pid_kind == V_INT64    ? PyLong_FromLongLong((long long)(int64_t)m->pid)
                        : m->pid_kind == V_UINT64 ? PyLong_FromUnsignedLongLong(m->pid)
                                                  : Py_NewRef(Py_None);
        PyObject *hlo = m->has_hlo ? PyBytes_FromStringAndSize((const char *)m->hlo, (Py_ssize_t)m->hlo_len) : Py_NewRef(Py_None);
        PyObject *item = pid && hlo ? Py_BuildValue("(Ls#OO)", (long long)m->key, m->name, (Py_ssize_t)m->name_len, hlo, pid) : NULL;
        Py_XDECREF(pid);
        Py_XDECREF(hlo);
        if (!item) { Py_CLEAR(list); break; }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

/* d[key] = v, stealing v (NULL: a failure already raised). */
static int put(PyObject *d, const char *key, PyObject *v) {
    int rc = v ? PyDict_SetItemString(d, key, v) : -1;
    Py_XDECREF(v);
    return rc;
}

static PyObject *scan(PyObject *module, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"data", "threads", "chunk_bytes", "drop", "max_planes", NULL};
    PyObject *data;
    Py_ssize_t threads = 1, chunk_bytes = 1 << 20, max_planes = 0;
    int drop = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|nn$pn", keywords, &data, &threads, &chunk_bytes, &drop, &max_planes))
        return NULL;
    if (threads < 1 || chunk_bytes < 1 || max_planes < 0) {
        PyErr_SetString(PyExc_ValueError, "threads and chunk_bytes must be at least 1, max_planes at least 0");
        return NULL;
    }
    /* Dropping zeroes pages of the caller's memory, so it needs a writable buffer: never a bytes object. */
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, drop ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0) return NULL;
    Scan s;
    memset(&s, 0, sizeof s);
    s.threads = threads > MAX_WORKERS ? MAX_WORKERS : (int)threads;
    s.chunk_bytes = (size_t)chunk_bytes;
    s.drop = drop;
    s.max_planes = (size_t)max_planes;
    idmap_clear(&s.stat_ids);
    idmap_clear(&s.event_ids);
    s.device = -1;
    s.base = view.buf;
    s.limit = (ptr)view.buf + view.len;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = intern(&s.strings, -1, "", 0) < 0 ? -1 : scan_space(&s, view.buf, (ptr)view.buf + view.len);
    if (rc == 0) place_lines(&s);
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (rc < 0) {
        if (s.oom) PyErr_NoMemory();
        else PyErr_Format(ScanError, "%s at byte %zu", s.err ? s.err : "corrupt", s.err_at);
        goto done;
    }
    PyObject *columns = PyDict_New();
    for (int k = 0; columns && k < NCOLS; k++)
        if (put(columns, COLUMN_SPECS[k].name, column(&s.c.col[k], s.c.len, COLUMN_SPECS[k].size, s.c.cap * COLUMN_SPECS[k].size)) < 0) Py_CLEAR(columns);
    result = PyDict_New();
    if (!result || put(result, "columns", columns) < 0 || put(result, "steps", column((void **)&s.steps, s.nsteps * 3, 8, 0)) < 0 ||
        put(result, "spans", column((void **)&s.spans, s.nspans, sizeof(SpanRow), 0)) < 0 ||
        put(result, "groups", column((void **)&s.groups, s.ngroups * 3, 8, 0)) < 0 ||
        put(result, "strings", intern_list(&s.strings)) < 0 || put(result, "allocators", intern_list(&s.allocators)) < 0 ||
        put(result, "span_names", intern_list(&s.span_names)) < 0 ||
        put(result, "device_planes", intern_list(&s.device_planes)) < 0 || put(result, "hlo", meta_list(&s)) < 0 ||
        put(result, "has_cpu", PyBool_FromLong(s.has_cpu)) < 0 ||
        put(result, "num_planes", PyLong_FromSize_t(s.num_planes)) < 0 || put(result, "end_ps", PyLong_FromLongLong(s.end_ps)) < 0 ||
        put(result, "time_base_ns", PyLong_FromLongLong(s.time_base_ns)) < 0) {
        if (!result) Py_XDECREF(columns);
        Py_CLEAR(result);
    }
done:
    scan_free(&s);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", (PyCFunction)(void (*)(void))scan, METH_VARARGS | METH_KEYWORDS,
     "scan(data, threads=1, chunk_bytes=1 << 20, *, drop=False, max_planes=0) -> dict: the /host:CPU memory-event\n"
     "columns (COLUMNS), step rows (step, start, end), span rows (start, end, name, device, source, root, line: xspace.SPAN_ROW) with their\n"
     "span_names, group rows (group, start, end), interned strings, allocator keys (a kind byte S/I/U and the\n"
     "value), device_planes, and the /host:metadata entries (key, name, hlo, program_id). The CPU plane's\n"
     "events are cut into chunks of about chunk_bytes, scanned by up to `threads` threads; the result does not\n"
     "depend on either. drop=True (a writable buffer only) gives the scanned lines' whole 2 MiB blocks back to\n"
     "the system as they are scanned (madvise MADV_DONTNEED): a private anonymous buffer reads as zeros there\n"
     "afterwards. Nothing returned points into the buffer. Past max_planes planes (0: no limit) none is read:\n"
     "num_planes is then max_planes + 1 and the rest is empty."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_xspace_scan", "Compiled XSpace scanner.", -1, methods};

PyMODINIT_FUNC PyInit__xspace_scan(void) {
    if (PyType_Ready(&ColumnType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (!m) return NULL;
    ScanError = PyErr_NewException("tb_leakfinder.read.formats.xplane._xspace_scan.ScanError", PyExc_ValueError, NULL);
    PyObject *fields = PyDict_New();
    for (size_t i = 0; fields && i < sizeof FIELD_NUMBERS / sizeof FIELD_NUMBERS[0]; i++)
        if (put(fields, FIELD_NUMBERS[i].name, PyLong_FromLong(FIELD_NUMBERS[i].number)) < 0) Py_CLEAR(fields);
    PyObject *columns = PyDict_New(); /* name -> numpy dtype string */
    for (int k = 0; columns && k < NCOLS; k++)
        if (put(columns, COLUMN_SPECS[k].name, PyUnicode_FromString(COLUMN_SPECS[k].dtype)) < 0) Py_CLEAR(columns);
    PyObject *roles = PyDict_New(); /* stat name -> the column its value fills */
    for (size_t i = 0; roles && i < sizeof ROLE_NAMES / sizeof ROLE_NAMES[0]; i++) {
        int col = ROLE_NAMES[i].column;
        if (col >= 0 && put(roles, ROLE_NAMES[i].name, PyUnicode_FromString(COLUMN_SPECS[col].name)) < 0) Py_CLEAR(roles);
    }
    int ok = ScanError && fields && columns && roles && PyModule_AddObjectRef(m, "ScanError", ScanError) == 0 &&
             PyModule_AddObjectRef(m, "FIELDS", fields) == 0 && PyModule_AddObjectRef(m, "COLUMNS", columns) == 0 &&
             PyModule_AddObjectRef(m, "STAT_COLUMNS", roles) == 0 && PyModule_AddIntConstant(m, "MAX_DEPTH", MAX_DEPTH) == 0;
    Py_XDECREF(fields);
    Py_XDECREF(columns);
    Py_XDECREF(roles);
    if (!ok) Py_CLEAR(m);
    return m;
}
