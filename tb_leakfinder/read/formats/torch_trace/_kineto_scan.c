/* A compiled scanner of runs of PyTorch trace events (Kineto's Chrome trace JSON), for chunks.py.
 *
 * `Scanner.scan(text, start, end)` reads text[start:end], a run of events (JSON objects, comma separated), straight
 * from the window's str (an ASCII str's data is its UTF-8), or from a run's UTF-8 bytes when it holds other characters
 * (chunks.py encodes such a run), and gives back one fixed-size record per event: the
 * C numbers of its (ph, name, cat, pid, tid) kind and of its (`Input Dims`, `Input type`) shape text, `ts` and
 * `dur` as Python's float() and int() give them (whether each was a JSON int is kept: the reader keeps the number
 * itself for the earliest and latest times), and the memory figures of `args`. Kinds and shapes are interned in
 * hash tables by the raw bytes of their values; each new one is handed back to Python once, as the tuple or
 * bytes chunks.py's msgspec path makes of it, to be classified there.
 *
 * The scanner takes only what it is sure of: a string with an escape in a field it keeps, a null, a bool or a
 * number of another form than the one msgspec's `Event`/`Args` accept, a duplicate key, a number too long to
 * convert here, NaN, Infinity or one beyond a double, a lone surrogate escape, nesting deeper than MAX_DEPTH, JSON
 * that is not well formed, an event that is not an object, a str that is not ASCII or bytes that are not UTF-8 as
 * Python's strict codec takes it make it give the whole run up (None) before anything reaches Python; the run then goes to the
 * msgspec path and from there, if need be, one event at a time. Every value it skips is still checked to be JSON
 * the json module takes. Every read is bounds-checked against `end`; recursion is bounded by MAX_DEPTH.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64
/* A number longer than this is given up on (the json module refuses ints of thousands of digits). */
#define MAX_NUMBER_CHARS 100
/* Integers of up to this many digits fit int64; an `Addr` may have up to 20 (uint64). */
#define MAX_INT_DIGITS 18
#define MAX_ADDR_DIGITS 20
/* chunks.NO_TOTAL: an absent `Total Allocated`. */
#define NO_TOTAL (-(INT64_C(1) << 62))
#define CPU_TYPE 0

/* Record.flags */
#define TS_GIVEN 1
#define TS_INT 2
#define DUR_GIVEN 4
#define DUR_INT 8
#define ARGS_GIVEN 16
#define BYTES_GIVEN 32
#define ADDR_GIVEN 64

/* One event; chunks.RECORD is its numpy dtype (the tests check the two agree). */
typedef struct {
    double ts, dur;
    int64_t nbytes, device_type, device_id, total;
    uint64_t addr;
    int32_t kind, shape;
    uint8_t flags;
    uint8_t pad[7];
} Record;

/* Fields of an event: where their value's text is, and what it is. */
enum { F_PH, F_NAME, F_CAT, F_PID, F_TID, F_DIMS, F_TYPES, N_FIELDS };
#define TAG_ABSENT 0
#define TAG_STRING 's'
#define TAG_INT 'i'
#define TAG_RAW 'r'

typedef struct {
    const char *at;
    Py_ssize_t len;
    int tag;
    long long value; /* TAG_INT */
} Field;

/* --- interning ----------------------------------------------------------- */

typedef struct {
    uint64_t hash;
    char *key;
    Py_ssize_t len;
} Entry;

typedef struct {
    Entry *entries;
    Py_ssize_t count, capacity; /* entries */
    int32_t *slots;             /* index into entries, -1 when empty; a power of two, at most half full */
    Py_ssize_t mask;
    Py_ssize_t held; /* bytes of keys */
} Table;

static void table_free(Table *t) {
    for (Py_ssize_t i = 0; i < t->count; i++) free(t->entries[i].key);
    free(t->entries);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

/* Python's randomized hash of a constant, set when the module loads: a trace cannot be made of kinds whose hashes
 * collide, for they differ in every process (as str hashes do). */
static uint64_t hash_seed;

static uint64_t hash_bytes(const char *p, Py_ssize_t n) {
    uint64_t h = hash_seed ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDu;
        h ^= h >> 32;
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, (size_t)n);
    h = (h ^ w) * 0xC4CEB9FE1A85EC53u;
    return h ^ (h >> 29);
}

static int table_grow(Table *t) {
    Py_ssize_t slots = t->slots ? 2 * (t->mask + 1) : 1024;
    if (slots > INT32_MAX / 2) return -1;
    int32_t *fresh = malloc((size_t)slots * sizeof *fresh);
    if (!fresh) return -1;
    memset(fresh, 0xFF, (size_t)slots * sizeof *fresh);
    for (Py_ssize_t i = 0; i < t->count; i++) {
        Py_ssize_t s = (Py_ssize_t)(t->entries[i].hash & (uint64_t)(slots - 1));
        while (fresh[s] >= 0) s = (s + 1) & (slots - 1);
        fresh[s] = (int32_t)i;
    }
    free(t->slots);
    t->slots = fresh;
    t->mask = slots - 1;
    return 0;
}

/* The number of `key`, and whether it is new (*added); -1 when out of memory. */
static Py_ssize_t table_intern(Table *t, const char *key, Py_ssize_t len, int *added) {
    uint64_t h = hash_bytes(key, len);
    *added = 0;
    if (t->slots) {
        Py_ssize_t s = (Py_ssize_t)(h & (uint64_t)t->mask);
        for (int32_t i; (i = t->slots[s]) >= 0; s = (s + 1) & t->mask) {
            Entry *e = &t->entries[i];
            if (e->hash == h && e->len == len && memcmp(e->key, key, (size_t)len) == 0) return i;
        }
    }
    if (!t->slots || 2 * (t->count + 1) > t->mask + 1) {
        if (table_grow(t) < 0) return -1;
    }
    if (t->count == t->capacity) {
        Py_ssize_t more = t->capacity ? 2 * t->capacity : 256;
        Entry *grown = realloc(t->entries, (size_t)more * sizeof *grown);
        if (!grown) return -1;
        t->entries = grown;
        t->capacity = more;
    }
    char *copy = malloc(len ? (size_t)len : 1);
    if (!copy) return -1;
    memcpy(copy, key, (size_t)len);
    Py_ssize_t s = (Py_ssize_t)(h & (uint64_t)t->mask);
    while (t->slots[s] >= 0) s = (s + 1) & t->mask;
    t->slots[s] = (int32_t)t->count;
    t->entries[t->count] = (Entry){h, copy, len};
    t->held += len;
    *added = 1;
    return t->count++;
}

/* --- JSON ---------------------------------------------------------------- */

static inline const char *ws(const char *p, const char *e) {
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    return p;
}

static inline int is_digit(char c) { return c >= '0' && c <= '9'; }

static inline int is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

/* The UTF-16 code unit of the \uXXXX escape at p, or -1. */
static int code_unit(const char *p, const char *e) {
    int unit = 0;
    if (e - p < 6 || p[0] != '\\' || p[1] != 'u') return -1;
    for (int i = 2; i < 6; i++) {
        char c = p[i];
        if (!is_hex(c)) return -1;
        unit = unit * 16 + (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return unit;
}

/* After the string whose opening quote is at p, or NULL when it is no JSON string the json module takes (a control
 * character, a bad escape, no closing quote before e). *escaped says whether it has an escape. */
static const char *string_end(const char *p, const char *e, int *escaped) {
    *escaped = 0;
    for (p++; p < e; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"') return p + 1;
        /* A byte past ASCII comes only in UTF-8 checked whole by Scanner_scan, and is never '"' nor '\\'. */
        if (c < 0x20) return NULL;
        if (c == '\\') {
            *escaped = 1;
            if (e - p < 2) return NULL;
            char x = p[1];
            if (x == 'u') {
                /* A surrogate must be one of a pair, high then low: msgspec refuses a lone one. */
                int unit = code_unit(p, e);
                if (unit < 0 || (unit >= 0xDC00 && unit <= 0xDFFF)) return NULL;
                if (unit >= 0xD800 && unit <= 0xDBFF) {
                    int low = code_unit(p + 6, e);
                    if (low < 0xDC00 || low > 0xDFFF) return NULL;
                    p += 6;
                }
                p += 5;
            } else if (x == '"' || x == '\\' || x == '/' || x == 'b' || x == 'f' || x == 'n' || x == 'r' || x == 't') {
                p += 1;
            } else {
                return NULL;
            }
        }
    }
    return NULL;
}

/* After the JSON number at p (its grammar exactly), or NULL; *is_int when it has no fraction and no exponent. */
static const char *number_end(const char *p, const char *e, int *is_int) {
    const char *start = p;
    if (p < e && *p == '-') p++;
    if (p >= e) return NULL;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < e && is_digit(*p)) p++;
    } else {
        return NULL;
    }
    *is_int = 1;
    if (p < e && *p == '.') {
        p++;
        if (p >= e || !is_digit(*p)) return NULL;
        while (p < e && is_digit(*p)) p++;
        *is_int = 0;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-')) p++;
        if (p >= e || !is_digit(*p)) return NULL;
        while (p < e && is_digit(*p)) p++;
        *is_int = 0;
    }
    return p - start > MAX_NUMBER_CHARS ? NULL : p;
}

static const char *skip_value(const char *p, const char *e, int depth);

static const char *literal(const char *p, const char *e, const char *word, size_t n) {
    return (size_t)(e - p) >= n && memcmp(p, word, n) == 0 ? p + n : NULL;
}

/* After the JSON value at p, checked but not kept; NULL when it is not one, or nested deeper than MAX_DEPTH. */
static const char *skip_value(const char *p, const char *e, int depth) {
    int flag;
    if (p >= e) return NULL;
    switch (*p) {
    case '"':
        return string_end(p, e, &flag);
    case '{':
    case '[': {
        char close = *p == '{' ? '}' : ']';
        if (depth >= MAX_DEPTH) return NULL;
        p = ws(p + 1, e);
        if (p < e && *p == close) return p + 1;
        for (;;) {
            if (close == '}') {
                if (p >= e || *p != '"' || !(p = string_end(p, e, &flag))) return NULL;
                p = ws(p, e);
                if (p >= e || *p != ':') return NULL;
                p = ws(p + 1, e);
            }
            if (!(p = skip_value(p, e, depth + 1))) return NULL;
            p = ws(p, e);
            if (p >= e) return NULL;
            if (*p == close) return p + 1;
            if (*p != ',') return NULL;
            p = ws(p + 1, e);
        }
    }
    case 't':
        return literal(p, e, "true", 4);
    case 'f':
        return literal(p, e, "false", 5);
    case 'n':
        return literal(p, e, "null", 4);
    default:
        return number_end(p, e, &flag);
    }
}

/* The string at p without escapes into *f; NULL when it is none. */
static const char *plain_string(const char *p, const char *e, Field *f) {
    if (p >= e || *p != '"') return NULL;
    const char *start = ++p;
    /* Up to the closing quote; an escape or a control character (which the json module refuses) ends it early. */
    while (p < e && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20) p++;
    if (p >= e || *p != '"') return NULL;
    *f = (Field){start, p - start, TAG_STRING, 0};
    return p + 1;
}

/* The JSON int at p, of at most `digits` digits, into *value (as uint64 when `unsigned_` and not negative); NULL
 * when it is no JSON number or has a fraction or an exponent. */
static const char *integer(const char *p, const char *e, int digits, int unsigned_, uint64_t *value, int *negative) {
    *negative = p < e && *p == '-';
    p += *negative;
    const char *start = p;
    if (p >= e || !is_digit(*p) || (*p == '0' && p + 1 < e && is_digit(p[1]))) return NULL;
    uint64_t v = 0;
    for (; p < e && is_digit(*p); p++) {
        uint64_t digit = (uint64_t)(*p - '0');
        if (p - start >= digits || v > (UINT64_MAX - digit) / 10) return NULL;
        v = v * 10 + digit;
    }
    if (p < e && (*p == '.' || *p == 'e' || *p == 'E')) return NULL;
    if (unsigned_ && *negative && v) return NULL;
    *value = v;
    return p;
}

static const char *int64_value(const char *p, const char *e, int64_t *out) {
    uint64_t v;
    int negative;
    if (!(p = integer(p, e, MAX_INT_DIGITS, 0, &v, &negative))) return NULL;
    *out = negative ? -(int64_t)v : (int64_t)v;
    return p;
}

static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The JSON number at p as Python's float() and int() give it: *is_int for an int (one of at most 2^53, which a
 * double holds). A decimal of at most 2^53 as digits and a power of ten of at most 22 is one correctly rounded
 * operation on exact doubles (Clinger's fast path), as in Python's own conversion, which serves the others. */
static const char *number(const char *p, const char *e, double *out, int *is_int) {
    const char *start = p;
    int negative = p < e && *p == '-';
    p += negative;
    if (p >= e || !is_digit(*p) || (*p == '0' && p + 1 < e && is_digit(p[1]))) return NULL;
    uint64_t m = 0;
    int exponent = 0, exact = 1;
    for (; p < e && is_digit(*p); p++) {
        if (m > 900719925474098u) exact = 0; /* m * 10 + 9 would pass 2^53 */
        else m = m * 10 + (uint64_t)(*p - '0');
    }
    *is_int = 1;
    if (p < e && *p == '.') {
        if (++p >= e || !is_digit(*p)) return NULL;
        for (; p < e && is_digit(*p); p++) {
            if (m > 900719925474098u) exact = 0;
            else m = m * 10 + (uint64_t)(*p - '0'), exponent--;
        }
        *is_int = 0;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        int sign = 1, written = 0;
        p++;
        if (p < e && (*p == '+' || *p == '-')) sign = *p++ == '-' ? -1 : 1;
        if (p >= e || !is_digit(*p)) return NULL;
        for (; p < e && is_digit(*p); p++) {
            written = written * 10 + (*p - '0');
            if (written > 400) exact = 0, written = 400;
        }
        exponent += sign * written;
        *is_int = 0;
    }
    if (p - start > MAX_NUMBER_CHARS) return NULL;
    if (*is_int) {
        /* Beyond 2^53 a double is not the int: the reader would refuse the time as inexact anyway. -0 is 0. */
        if (!exact) return NULL;
        *out = negative && m ? -(double)m : (double)m;
        return p;
    }
    if (exact && (m == 0 || (exponent >= -22 && exponent <= 22))) {
        double v = (double)m;
        v = m == 0 ? 0.0 : exponent < 0 ? v / POW10[-exponent] : v * POW10[exponent];
        *out = negative ? -v : v;
        return p;
    }
    char text[MAX_NUMBER_CHARS + 1];
    memcpy(text, start, (size_t)(p - start));
    text[p - start] = 0;
    char *stop;
    double v = PyOS_string_to_double(text, &stop, NULL);
    if ((v == -1.0 && PyErr_Occurred()) || stop != text + (p - start) || !isfinite(v)) { /* msgspec refuses 1e400 */
        PyErr_Clear();
        return NULL;
    }
    *out = v;
    return p;
}

/* --- events -------------------------------------------------------------- */

static int key_is(const char *key, Py_ssize_t n, const char *name) {
    return (size_t)n == strlen(name) && memcmp(key, name, (size_t)n) == 0;
}

/* The key at p (a string without escapes) into *key, *len; after its colon, or NULL. */
static const char *object_key(const char *p, const char *e, const char **key, Py_ssize_t *len) {
    Field f;
    if (!(p = plain_string(p, e, &f))) return NULL;
    *key = f.at;
    *len = f.len;
    p = ws(p, e);
    if (p >= e || *p != ':') return NULL;
    return ws(p + 1, e);
}

/* After a member's value at p: 1 with *p after the object's closing brace, 0 with *p at the next key, or -1. */
static int member_end(const char **p, const char *e) {
    const char *q = ws(*p, e);
    if (q >= e) return -1;
    if (*q == '}') {
        *p = q + 1;
        return 1;
    }
    if (*q != ',') return -1;
    *p = ws(q + 1, e);
    return 0;
}

/* One member of an object: its key, its value at p into the record and fields; after the value, or NULL. *bit is
 * the member's among those kept (0 for one skipped): a kept key met twice gives the run up. */
typedef const char *(*Member)(const char *key, Py_ssize_t len, const char *p, const char *e, Record *r, Field *fields,
                              unsigned *bit);

/* The object at p (its opening brace), each member through `member`; after it, or NULL. */
static const char *object(const char *p, const char *e, Member member, Record *r, Field *fields) {
    unsigned seen = 0;
    if (p >= e || *p != '{') return NULL;
    p = ws(p + 1, e);
    if (p < e && *p == '}') return p + 1;
    for (;;) {
        const char *key;
        Py_ssize_t len;
        unsigned bit = 0;
        if (!(p = object_key(p, e, &key, &len))) return NULL;
        p = member(key, len, p, e, r, fields, &bit);
        if (!p || (seen & bit)) return NULL;
        seen |= bit;
        int closed = member_end(&p, e);
        if (closed) return closed > 0 ? p : NULL;
    }
}

/* A member of `args`: the memory figures and an op's shape texts. */
static const char *args_member(const char *key, Py_ssize_t len, const char *p, const char *e, Record *r, Field *fields,
                               unsigned *bit) {
    if (key_is(key, len, "Bytes")) {
        r->flags |= BYTES_GIVEN;
        return *bit = 1, int64_value(p, e, &r->nbytes);
    }
    if (key_is(key, len, "Device Type")) return *bit = 2, int64_value(p, e, &r->device_type);
    if (key_is(key, len, "Device Id")) return *bit = 4, int64_value(p, e, &r->device_id);
    if (key_is(key, len, "Addr")) {
        int negative;
        r->flags |= ADDR_GIVEN;
        return *bit = 8, integer(p, e, MAX_ADDR_DIGITS, 1, &r->addr, &negative);
    }
    if (key_is(key, len, "Total Allocated")) return *bit = 16, int64_value(p, e, &r->total);
    if (key_is(key, len, "Input Dims") || key_is(key, len, "Input type")) {
        int which = key[6] == 'D' ? F_DIMS : F_TYPES;
        const char *start = p;
        *bit = which == F_DIMS ? 32 : 64;
        if ((p = skip_value(p, e, 2))) fields[which] = (Field){start, p - start, TAG_RAW, 0};
        return p;
    }
    return skip_value(p, e, 2);
}

/* A member of an event. */
static const char *event_member(const char *key, Py_ssize_t len, const char *p, const char *e, Record *r, Field *fields,
                                unsigned *bit) {
    int is_int;
    if (len == 2 && key[0] == 'p' && key[1] == 'h') return *bit = 1, plain_string(p, e, &fields[F_PH]);
    if (len == 4 && memcmp(key, "name", 4) == 0) return *bit = 2, plain_string(p, e, &fields[F_NAME]);
    if (len == 3 && memcmp(key, "cat", 3) == 0) return *bit = 4, plain_string(p, e, &fields[F_CAT]);
    if (len == 3 && (memcmp(key, "pid", 3) == 0 || memcmp(key, "tid", 3) == 0)) {
        Field *f = &fields[key[0] == 'p' ? F_PID : F_TID];
        const char *start = p;
        int64_t v;
        *bit = key[0] == 'p' ? 8 : 16;
        if (p < e && *p == '"') return plain_string(p, e, f);
        if ((p = int64_value(p, e, &v))) *f = (Field){start, p - start, TAG_INT, v};
        return p;
    }
    if (len == 2 && key[0] == 't' && key[1] == 's') {
        p = number(p, e, &r->ts, &is_int);
        r->flags |= TS_GIVEN | (is_int ? TS_INT : 0);
        return *bit = 32, p;
    }
    if (len == 3 && memcmp(key, "dur", 3) == 0) {
        p = number(p, e, &r->dur, &is_int);
        r->flags |= DUR_GIVEN | (is_int ? DUR_INT : 0);
        return *bit = 64, p;
    }
    if (len == 4 && memcmp(key, "args", 4) == 0) {
        r->flags |= ARGS_GIVEN;
        return *bit = 128, object(p, e, args_member, r, fields);
    }
    return skip_value(p, e, 1);
}

/* The event object at p into the record and its fields; after it, or NULL. */
static const char *parse_event(const char *p, const char *e, Record *r, Field *fields) {
    memset(fields, 0, N_FIELDS * sizeof *fields);
    *r = (Record){0};
    r->device_type = CPU_TYPE;
    r->device_id = -1;
    r->total = NO_TOTAL;
    return object(p, e, event_member, r, fields);
}

/* --- the scanner --------------------------------------------------------- */

typedef struct {
    PyObject_HEAD Table kinds, shapes;
    PyObject *new_kinds, *new_shapes; /* lists of what the tables gained since the last run handed back */
    char *key;
    Py_ssize_t key_capacity;
    Record *records;
    Py_ssize_t record_capacity;
} Scanner;

/* The fields' tags and texts, one after another, in the scanner's key buffer; its length, or -1. */
static Py_ssize_t build_key(Scanner *s, const Field *fields, int first, int last) {
    Py_ssize_t need = 0;
    for (int i = first; i < last; i++) need += 1 + (Py_ssize_t)sizeof(Py_ssize_t) + fields[i].len;
    if (need > s->key_capacity) {
        Py_ssize_t more = need > 2 * s->key_capacity ? need : 2 * s->key_capacity;
        char *grown = realloc(s->key, (size_t)more);
        if (!grown) return -1;
        s->key = grown;
        s->key_capacity = more;
    }
    char *k = s->key;
    for (int i = first; i < last; i++) {
        *k++ = (char)fields[i].tag;
        memcpy(k, &fields[i].len, sizeof(Py_ssize_t));
        k += sizeof(Py_ssize_t);
        if (fields[i].len) memcpy(k, fields[i].at, (size_t)fields[i].len); /* an absent field's `at` is NULL */
        k += fields[i].len;
    }
    return need;
}

/* A field as msgspec's Event gives it: None or "" when absent, the str, or the int. */
static PyObject *field_value(const Field *f, PyObject *absent) {
    if (f->tag == TAG_STRING) return PyUnicode_FromStringAndSize(f->at, f->len);
    if (f->tag == TAG_INT) return PyLong_FromLongLong(f->value);
    Py_INCREF(absent);
    return absent;
}

static PyObject *field_bytes(const Field *f) { return PyBytes_FromStringAndSize(f->tag ? f->at : "", f->tag ? f->len : 0); }

/* The number of the fields' (ph, name, cat, pid, tid) kind; a new one's tuple appended to new_kinds. -1 with an
 * exception set. */
static Py_ssize_t intern_kind(Scanner *s, const Field *fields) {
    int added;
    Py_ssize_t n = build_key(s, fields, F_PH, F_DIMS);
    Py_ssize_t k = n < 0 ? -1 : table_intern(&s->kinds, s->key, n, &added);
    if (k < 0 || k > INT32_MAX) return PyErr_NoMemory(), -1;
    if (added) {
        PyObject *empty = PyUnicode_FromStringAndSize("", 0);
        PyObject *kind = empty ? PyTuple_New(5) : NULL;
        for (int i = 0; kind && i < 5; i++) {
            PyObject *v = field_value(&fields[i], i < F_PID ? Py_None : empty);
            if (!v) Py_CLEAR(kind);
            else PyTuple_SET_ITEM(kind, i, v);
        }
        Py_XDECREF(empty);
        int failed = !kind || PyList_Append(s->new_kinds, kind) < 0;
        Py_XDECREF(kind);
        if (failed) return -1;
    }
    return k;
}

/* The number of the fields' (Input Dims, Input type) texts; a new one's bytes appended to new_shapes. -1 with an
 * exception set. An event with neither has number 0: the scanner interns that first. */
static Py_ssize_t intern_shape(Scanner *s, const Field *fields) {
    int added;
    if (s->shapes.count && !fields[F_DIMS].tag && !fields[F_TYPES].tag) return 0;
    Py_ssize_t n = build_key(s, fields, F_DIMS, N_FIELDS);
    Py_ssize_t k = n < 0 ? -1 : table_intern(&s->shapes, s->key, n, &added);
    if (k < 0 || k > INT32_MAX) return PyErr_NoMemory(), -1;
    if (added) {
        PyObject *shape = Py_BuildValue("(NN)", field_bytes(&fields[F_DIMS]), field_bytes(&fields[F_TYPES]));
        int failed = !shape || PyList_Append(s->new_shapes, shape) < 0;
        Py_XDECREF(shape);
        if (failed) return -1;
    }
    return k;
}

static PyObject *Scanner_scan(Scanner *s, PyObject *args) {
    PyObject *text;
    Py_ssize_t start, end;
    if (!PyArg_ParseTuple(args, "Onn", &text, &start, &end)) return NULL;
    int is_str = PyUnicode_Check(text);
    if (!is_str && !PyBytes_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "scan: text must be a str or bytes");
        return NULL;
    }
    Py_ssize_t length = is_str ? PyUnicode_GET_LENGTH(text) : PyBytes_GET_SIZE(text);
    if (start < 0 || end > length || start > end) {
        PyErr_SetString(PyExc_IndexError, "scan: start and end must lie within the text");
        return NULL;
    }
    if (is_str && !PyUnicode_IS_ASCII(text)) Py_RETURN_NONE;
    const char *data = is_str ? (const char *)PyUnicode_DATA(text) : PyBytes_AS_STRING(text);
    if (!is_str) {
        /* Checked as the strict codec checks it (no surrogates, no overlong forms): a kept str is then made from
         * its bytes exactly, and a skipped one holds nothing msgspec would refuse. */
        PyObject *checked = PyUnicode_DecodeUTF8(data + start, end - start, "strict");
        if (!checked) {
            if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) return NULL;
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        Py_DECREF(checked);
    }
    const char *p = ws(data + start, data + end), *e = data + end;
    Py_ssize_t n = 0;
    Field fields[N_FIELDS];
    while (p < e) {
        if (n == s->record_capacity) {
            Py_ssize_t more = n ? 2 * n : 4096;
            Record *grown = realloc(s->records, (size_t)more * sizeof *grown);
            if (!grown) return PyErr_NoMemory();
            s->records = grown;
            s->record_capacity = more;
        }
        Record *r = &s->records[n];
        if (!(p = parse_event(p, e, r, fields))) Py_RETURN_NONE;
        Py_ssize_t kind = intern_kind(s, fields), shape = kind < 0 ? -1 : intern_shape(s, fields);
        if (shape < 0) return NULL;
        r->kind = (int32_t)kind;
        r->shape = (int32_t)shape;
        n++;
        p = ws(p, e);
        if (p < e) {
            if (*p != ',') Py_RETURN_NONE;
            p = ws(p + 1, e);
            if (p >= e) Py_RETURN_NONE; /* a trailing comma */
        }
    }
    PyObject *fresh_kinds = PyList_New(0), *fresh_shapes = PyList_New(0);
    PyObject *records = PyBytes_FromStringAndSize((const char *)s->records, n * (Py_ssize_t)sizeof(Record));
    if (!fresh_kinds || !fresh_shapes || !records) {
        Py_XDECREF(fresh_kinds);
        Py_XDECREF(fresh_shapes);
        Py_XDECREF(records);
        return NULL;
    }
    PyObject *found = Py_BuildValue("(NNN)", records, s->new_kinds, s->new_shapes);
    s->new_kinds = fresh_kinds;
    s->new_shapes = fresh_shapes;
    return found;
}

static PyObject *Scanner_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *no_keywords[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, ":Scanner", no_keywords)) return NULL;
    Scanner *s = (Scanner *)type->tp_alloc(type, 0);
    if (!s) return NULL;
    s->new_kinds = PyList_New(0);
    s->new_shapes = PyList_New(0);
    Field none[N_FIELDS] = {{0}};
    if (!s->new_kinds || !s->new_shapes || intern_shape(s, none) != 0) {
        Py_DECREF(s);
        return NULL;
    }
    return (PyObject *)s;
}

static void Scanner_dealloc(Scanner *s) {
    table_free(&s->kinds);
    table_free(&s->shapes);
    Py_XDECREF(s->new_kinds);
    Py_XDECREF(s->new_shapes);
    free(s->key);
    free(s->records);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyObject *Scanner_held(Scanner *s, void *closure) {
    (void)closure;
    return Py_BuildValue("(nn)", s->kinds.count > s->shapes.count ? s->kinds.count : s->shapes.count,
                         s->kinds.held + s->shapes.held);
}

static PyMethodDef Scanner_methods[] = {
    {"scan", (PyCFunction)Scanner_scan, METH_VARARGS,
     "scan(text, start, end) -> (records, new_kinds, new_shapes) or None: the events of text[start:end] (JSON objects,\n"
     "comma separated; text an ASCII str, or UTF-8 bytes) as RECORD_SIZE-byte records, and the (ph, name, cat, pid, tid) tuples and (Input Dims, Input\n"
     "type) raw bytes first met since the last run handed back, numbered in order from 0 across runs; None when the\n"
     "run holds anything the scanner does not take exactly (nothing is handed back then)."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Scanner_getset[] = {
    {"held", (getter)Scanner_held, NULL, "(entries of the larger table, bytes of keys held)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tb_leakfinder.read.formats.torch_trace._kineto_scan.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One trace's kinds and shapes, interned across its runs of events.",
    .tp_new = Scanner_new,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_methods = Scanner_methods,
    .tp_getset = Scanner_getset,
};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_kineto_scan", "Compiled scanner of PyTorch trace events.", -1,
                                       NULL};

PyMODINIT_FUNC PyInit__kineto_scan(void) {
    hash_seed = 0x9E3779B97F4A7C15u ^ (uint64_t)_Py_HashBytes("_kineto_scan", 12);
    if (PyType_Ready(&ScannerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (!m) return NULL;
    Py_INCREF(&ScannerType);
    if (PyModule_AddObject(m, "Scanner", (PyObject *)&ScannerType) < 0 ||
        PyModule_AddIntConstant(m, "RECORD_SIZE", (long)sizeof(Record)) < 0 || PyModule_AddIntConstant(m, "TS_GIVEN", TS_GIVEN) < 0 ||
        PyModule_AddIntConstant(m, "TS_INT", TS_INT) < 0 || PyModule_AddIntConstant(m, "DUR_GIVEN", DUR_GIVEN) < 0 ||
        PyModule_AddIntConstant(m, "DUR_INT", DUR_INT) < 0 || PyModule_AddIntConstant(m, "ARGS_GIVEN", ARGS_GIVEN) < 0 ||
        PyModule_AddIntConstant(m, "BYTES_GIVEN", BYTES_GIVEN) < 0 || PyModule_AddIntConstant(m, "ADDR_GIVEN", ADDR_GIVEN) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
