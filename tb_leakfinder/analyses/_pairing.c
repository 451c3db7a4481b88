/* Pairing an allocator's events into buffer lifetimes, compiled (analyses/lifetimes.py's pair_events).
 *
 * The numpy path sorts the events by address (numpy's stable argsort), then makes about a dozen passes over them,
 * each with a fresh temporary: the next event at each address gathered and scattered between address and time
 * order, then one column per buffer field built by concatenating the buffers allocated before the window with the
 * others. Here it is two walks in time order and no sort: `link` holds only the addresses allocated at the time (a
 * few hundred or thousand, where a profile has hundreds of thousands of addresses in all, so its table stays in
 * the cache) and gives each allocation the next event at its address; `build` writes the buffer columns in place.
 * The two paths give the same columns (tests/unit/analyses/test_lifetimes.py compares them on fuzzed events).
 *
 * The columns come from Python as numpy arrays of the dtypes below, checked here by their byte lengths.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

/* A buffer's status and missing times, as model/lifetimes.py declares them. */
#define FREED 0
#define NEVER_FREED 1
#define BEFORE_WINDOW 2
#define NO_TIME (-1)

static int check_len(Py_buffer *view, Py_ssize_t n, Py_ssize_t itemsize, const char *name) {
    if (view->len != n * itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes, not %zd items of %zd", name, view->len, n, itemsize);
        return -1;
    }
    return 0;
}

/* A hash table of addresses, open addressing with linear probing (at most half full) and deletion by backward
 * shift. The hash is keyed by a seed the caller draws per call: addresses come from the profile, and a file crafted
 * so that its addresses collide under a known hash would make every probe walk the whole table. */
typedef struct {
    uint64_t *keys;
    Py_ssize_t *values; /* -1: an empty slot */
    size_t mask;        /* slots - 1; slots a power of two */
    size_t count;
    uint64_t seed;
} Table;

static inline size_t slot_of(const Table *t, uint64_t key) {
    uint64_t x = key ^ t->seed; /* a 64-bit finalizer (MurmurHash3's fmix64): every bit of the key moves the slot */
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return (size_t)x & t->mask;
}

static int table_init(Table *t, size_t slots, uint64_t seed) {
    t->keys = PyMem_RawMalloc(slots * sizeof *t->keys);
    t->values = PyMem_RawMalloc(slots * sizeof *t->values);
    if (!t->keys || !t->values) {
        PyMem_RawFree(t->keys);
        PyMem_RawFree(t->values);
        return -1;
    }
    memset(t->values, 0xff, slots * sizeof *t->values);
    t->mask = slots - 1;
    t->count = 0;
    t->seed = seed;
    return 0;
}

static void table_free(Table *t) {
    PyMem_RawFree(t->keys);
    PyMem_RawFree(t->values);
}

/* The slot of `key`, or the empty slot where it would go. */
static inline size_t table_find(const Table *t, uint64_t key) {
    size_t at = slot_of(t, key);
    while (t->values[at] >= 0 && t->keys[at] != key) at = (at + 1) & t->mask;
    return at;
}

static int table_grow(Table *t) {
    Table bigger;
    if (table_init(&bigger, 2 * (t->mask + 1), t->seed) < 0) return -1;
    for (size_t at = 0; at <= t->mask; at++) {
        if (t->values[at] < 0) continue;
        size_t to = table_find(&bigger, t->keys[at]);
        bigger.keys[to] = t->keys[at];
        bigger.values[to] = t->values[at];
    }
    bigger.count = t->count;
    table_free(t);
    *t = bigger;
    return 0;
}

/* Puts `key` in the empty slot `at` (table_find's), growing the table past half full. */
static inline int table_put(Table *t, size_t at, uint64_t key, Py_ssize_t value) {
    t->keys[at] = key;
    t->values[at] = value;
    return ++t->count * 2 > t->mask + 1 ? table_grow(t) : 0;
}

/* Empties slot `at`, moving back the entries after it that probed past it, so that no probe stops short. */
static inline void table_remove(Table *t, size_t at) {
    size_t hole = at;
    for (size_t next = (at + 1) & t->mask; t->values[next] >= 0; next = (next + 1) & t->mask) {
        size_t home = slot_of(t, t->keys[next]);
        /* The entry may fill the hole when its home slot is not in (hole, next], cyclically. */
        if (((next - home) & t->mask) >= ((next - hole) & t->mask)) {
            t->keys[hole] = t->keys[next];
            t->values[hole] = t->values[next];
            hole = next;
        }
    }
    t->values[hole] = -1;
    t->count--;
}

PyDoc_STRVAR(link_doc,
             "link(addr, kind, alloc_kind, free_kind, seed, following, first_free) -> (before_window, unmatched_frees)\n"
             "\n"
             "Walks the events in time order, holding only the addresses allocated and not yet freed, and writes\n"
             "each allocation's next event at its address (its free, or its reuse; -1: none) into `following`\n"
             "(intp; the other events' entries are left as they were), and into `first_free` (uint8) whether each\n"
             "event is the first at its address and a free. `addr` is uint64, `kind` int8; `seed` keys the hash.\n"
             "Returns how many first events are frees (buffers allocated before the window) and how many frees\n"
             "follow a free at the same address; None when an event is neither an allocation nor a free.");

static PyObject *pair_link(PyObject *self, PyObject *args) {
    Py_buffer addr, kind, following, first_free;
    int alloc_kind, free_kind;
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "y*y*iiKw*w*", &addr, &kind, &alloc_kind, &free_kind, &seed, &following, &first_free))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = kind.len;
    Py_ssize_t *orphans = NULL; /* frees of an address not allocated at the time: before the window, or unmatched */
    Table live = {0}, seen = {0};
    if (check_len(&addr, n, 8, "addr") < 0 || check_len(&following, n, sizeof(Py_ssize_t), "following") < 0 ||
        check_len(&first_free, n, 1, "first_free") < 0)
        goto done;
    const uint64_t *a = addr.buf;
    const int8_t *k = kind.buf;
    Py_ssize_t *next = following.buf;
    uint8_t *opens = first_free.buf;
    Py_ssize_t orphan_count = 0, before = 0, unmatched = 0;
    int other = 0, failed = 0;
    orphans = PyMem_RawMalloc((n ? n : 1) * sizeof *orphans);
    if (!orphans || table_init(&live, 1024, seed) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS;
    memset(opens, 0, (size_t)n);
    /* An allocated address is in `live` with its last allocation: a free there ends that buffer and the address
     * leaves; an allocation there ends it by reuse. A free elsewhere is an orphan, sorted out below. */
    for (Py_ssize_t i = 0; i < n && !failed; i++) {
        size_t at = table_find(&live, a[i]);
        if (k[i] == alloc_kind) {
            next[i] = -1;
            if (live.values[at] >= 0) {
                next[live.values[at]] = i;
                live.values[at] = i;
            } else {
                failed = table_put(&live, at, a[i], i) < 0;
            }
        } else if (k[i] == free_kind) {
            if (live.values[at] >= 0) {
                next[live.values[at]] = i;
                table_remove(&live, at);
            } else {
                orphans[orphan_count++] = i;
            }
        } else {
            other = 1;
            break;
        }
    }
    /* An orphan is the first event at its address (a buffer allocated before the window), or it follows a free
     * there (the address was not allocated, so its last event was a free): the first event at each orphan's
     * address tells which. */
    if (!failed && !other && orphan_count) {
        failed = table_init(&seen, 1024, seed) < 0;
        for (Py_ssize_t j = 0; j < orphan_count && !failed; j++) {
            size_t at = table_find(&seen, a[orphans[j]]);
            if (seen.values[at] < 0) failed = table_put(&seen, at, a[orphans[j]], PY_SSIZE_T_MAX) < 0;
        }
        for (Py_ssize_t i = 0; i < n && !failed; i++) {
            size_t at = table_find(&seen, a[i]);
            if (seen.values[at] == PY_SSIZE_T_MAX) seen.values[at] = i; /* the first event at that address */
        }
        for (Py_ssize_t j = 0; j < orphan_count && !failed; j++) {
            Py_ssize_t i = orphans[j];
            int first = seen.values[table_find(&seen, a[i])] == i;
            opens[i] = (uint8_t)first;
            before += first;
            unmatched += !first;
        }
    }
    Py_END_ALLOW_THREADS;
    if (failed)
        PyErr_NoMemory();
    else if (other)
        result = Py_NewRef(Py_None);
    else
        result = Py_BuildValue("nn", before, unmatched);
done:
    PyMem_RawFree(orphans);
    table_free(&live);
    table_free(&seen);
    PyBuffer_Release(&addr);
    PyBuffer_Release(&kind);
    PyBuffer_Release(&following);
    PyBuffer_Release(&first_free);
    return result;
}

/* The buffers' event columns: int32 where every position fits, else int64 (model/lifetimes.py). */
static inline void put_index(void *column, int wide, Py_ssize_t row, Py_ssize_t value) {
    if (wide)
        ((int64_t *)column)[row] = value;
    else
        ((int32_t *)column)[row] = (int32_t)value;
}

PyDoc_STRVAR(build_doc,
             "build(following, first_free, kind, time_ps, event_step, alloc_kind, free_kind, wide, alloc_event,\n"
             "      free_event, alloc_time, free_time, status, source, alloc_step, free_step) -> reused\n\n"
             "Writes the buffers in time order into the columns: those allocated before the window (one per\n"
             "address whose first event is a free, `first_free`), then one per allocation, ended by the next\n"
             "event at its address (`following`): its free, or its reuse. `time_ps` is int64, `event_step` int32;\n"
             "`alloc_event` and `free_event` are int64 when `wide`, else int32; `source` intp, `status` int8, the\n"
             "times int64 and the steps int32. Returns how many buffers were ended by a reuse of their address.");

static PyObject *pair_build(PyObject *self, PyObject *args) {
    Py_buffer following, first_free, kind, time_ps, event_step;
    Py_buffer alloc_event, free_event, alloc_time, free_time, status, source, alloc_step, free_step;
    int alloc_kind, free_kind, wide;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*iipw*w*w*w*w*w*w*w*", &following, &first_free, &kind, &time_ps, &event_step,
                          &alloc_kind, &free_kind, &wide, &alloc_event, &free_event, &alloc_time, &free_time, &status,
                          &source, &alloc_step, &free_step))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = kind.len, m = status.len, index_size = wide ? 8 : 4;
    if (check_len(&following, n, sizeof(Py_ssize_t), "following") < 0 || check_len(&first_free, n, 1, "first_free") < 0 ||
        check_len(&time_ps, n, 8, "time_ps") < 0 || check_len(&event_step, n, 4, "event_step") < 0 ||
        check_len(&alloc_event, m, index_size, "alloc_event") < 0 || check_len(&free_event, m, index_size, "free_event") < 0 ||
        check_len(&alloc_time, m, 8, "alloc_time") < 0 || check_len(&free_time, m, 8, "free_time") < 0 ||
        check_len(&source, m, sizeof(Py_ssize_t), "source") < 0 || check_len(&alloc_step, m, 4, "alloc_step") < 0 ||
        check_len(&free_step, m, 4, "free_step") < 0)
        goto done;
    {
        const Py_ssize_t *next = following.buf;
        const uint8_t *opens = first_free.buf;
        const int8_t *k = kind.buf;
        const int64_t *t = time_ps.buf;
        const int32_t *step = event_step.buf;
        int64_t *a_time = alloc_time.buf, *f_time = free_time.buf;
        int8_t *st = status.buf;
        Py_ssize_t *src = source.buf;
        int32_t *a_step = alloc_step.buf, *f_step = free_step.buf;
        Py_ssize_t before = 0, allocations = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            before += opens[i];
            allocations += k[i] == alloc_kind;
        }
        if (before + allocations != m) {
            PyErr_Format(PyExc_ValueError, "%zd buffers, not %zd before the window and %zd allocations", m, before,
                         allocations);
            goto done;
        }
        Py_ssize_t reused = 0, b = 0, row = before;
        Py_BEGIN_ALLOW_THREADS;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (opens[i]) {
                put_index(alloc_event.buf, wide, b, -1);
                put_index(free_event.buf, wide, b, i);
                a_time[b] = NO_TIME;
                f_time[b] = t[i];
                st[b] = BEFORE_WINDOW;
                src[b] = i;
                a_step[b] = -1;
                f_step[b] = t[i] != NO_TIME ? step[i] : -1;
                b++;
            }
            if (k[i] != alloc_kind) continue;
            Py_ssize_t after = next[i];
            int ended = after >= 0, freed = ended && k[after] == free_kind;
            int64_t end_time = ended ? t[after] : NO_TIME;
            put_index(alloc_event.buf, wide, row, i);
            put_index(free_event.buf, wide, row, freed ? after : -1);
            a_time[row] = t[i];
            f_time[row] = end_time;
            st[row] = ended ? FREED : NEVER_FREED;
            src[row] = i;
            a_step[row] = step[i];
            f_step[row] = end_time != NO_TIME ? step[after] : -1;
            reused += ended && !freed;
            row++;
        }
        Py_END_ALLOW_THREADS;
        result = PyLong_FromSsize_t(reused);
    }
done:
    PyBuffer_Release(&following);
    PyBuffer_Release(&first_free);
    PyBuffer_Release(&kind);
    PyBuffer_Release(&time_ps);
    PyBuffer_Release(&event_step);
    PyBuffer_Release(&alloc_event);
    PyBuffer_Release(&free_event);
    PyBuffer_Release(&alloc_time);
    PyBuffer_Release(&free_time);
    PyBuffer_Release(&status);
    PyBuffer_Release(&source);
    PyBuffer_Release(&alloc_step);
    PyBuffer_Release(&free_step);
    return result;
}

static PyMethodDef methods[] = {
    {"link", pair_link, METH_VARARGS, link_doc},
    {"build", pair_build, METH_VARARGS, build_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_pairing", "Buffer lifetimes paired in two passes.", -1, methods};

PyMODINIT_FUNC PyInit__pairing(void) { return PyModule_Create(&module); }
