/* File mappings that survive their file being cut short while they are read (read/files.py's read_private).
 *
 * Touching a page of a file mapping that lies past the file's end raises SIGBUS, whose default action kills the
 * process: a profile truncated in place (still being written, or copied over) while the CLI reads it. A mapping is
 * guarded for as long as it is read: its address range is registered here, and this module's SIGBUS handler, on a
 * fault inside a registered range, maps anonymous zero pages over the range from the faulting page to its end, marks
 * the range as cut and returns, so the access that faulted, and every later one, reads zeros (in any thread: the
 * scanner's workers too). The reader then asks `release(token)` whether the range was cut, and refuses what it read.
 * A fault anywhere else goes to the handler that was there before (Python's faulthandler, or the default action: the
 * process dies of it as it would have).
 *
 * Only async-signal-safe work is done in the handler: atomic loads, mmap (a system call) and sigaction.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SLOTS 64 /* mappings guarded at once: readers in flight in one process */

typedef struct {
    uintptr_t start; /* 0: a free slot */
    uintptr_t end;
    int cut;
} Range;

static Range ranges[SLOTS];
static struct sigaction previous; /* what SIGBUS did before this module's handler */
static uintptr_t page_mask;

static void chain(int sig, siginfo_t *info, void *context) {
    if (previous.sa_flags & SA_SIGINFO) {
        if (previous.sa_sigaction) {
            previous.sa_sigaction(sig, info, context);
            return;
        }
    } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
        previous.sa_handler(sig);
        return;
    }
    struct sigaction fallback;
    memset(&fallback, 0, sizeof fallback);
    fallback.sa_handler = SIG_DFL;
    sigemptyset(&fallback.sa_mask);
    sigaction(sig, &fallback, NULL);
    /* A fault: returning runs the access again, which now dies of the default action. A signal sent with kill():
     * sent again, it is delivered once this handler returns. */
    if (info->si_code <= 0) raise(sig);
}

static void on_sigbus(int sig, siginfo_t *info, void *context) {
    uintptr_t addr = (uintptr_t)info->si_addr;
    if (info->si_code > 0) {
        for (int i = 0; i < SLOTS; i++) {
            uintptr_t start = __atomic_load_n(&ranges[i].start, __ATOMIC_ACQUIRE);
            if (!start || addr < start) continue;
            uintptr_t end = __atomic_load_n(&ranges[i].end, __ATOMIC_ACQUIRE);
            if (addr >= end) continue;
            uintptr_t page = addr & page_mask;
            void *zeros = mmap((void *)page, end - page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
            if (zeros == MAP_FAILED) break;
            __atomic_store_n(&ranges[i].cut, 1, __ATOMIC_RELEASE);
            return;
        }
    }
    chain(sig, info, context);
}

/* This module's handler on top, whatever was installed since (faulthandler.enable() after the first guard). */
static int install(void) {
    struct sigaction now;
    if (sigaction(SIGBUS, NULL, &now) != 0) return -1;
    if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_sigbus) return 0;
    struct sigaction mine;
    memset(&mine, 0, sizeof mine);
    mine.sa_sigaction = on_sigbus;
    mine.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&mine.sa_mask);
    previous = now;
    return sigaction(SIGBUS, &mine, NULL);
}

static PyObject *guard(PyObject *module, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    uintptr_t start = (uintptr_t)view.buf, end = start + (uintptr_t)view.len;
    PyBuffer_Release(&view);
    if (!view.len || install() != 0) return PyLong_FromLong(-1);
    end = (end + ~page_mask) & page_mask; /* the mapping's last page is whole */
    for (int i = 0; i < SLOTS; i++) {
        if (__atomic_load_n(&ranges[i].start, __ATOMIC_ACQUIRE)) continue;
        __atomic_store_n(&ranges[i].cut, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&ranges[i].end, end, __ATOMIC_RELAXED);
        __atomic_store_n(&ranges[i].start, start, __ATOMIC_RELEASE);
        return PyLong_FromLong(i);
    }
    return PyLong_FromLong(-1);
}

static PyObject *release(PyObject *module, PyObject *arg) {
    long i = PyLong_AsLong(arg);
    if (i == -1 && PyErr_Occurred()) return NULL;
    if (i < 0 || i >= SLOTS) Py_RETURN_FALSE;
    __atomic_store_n(&ranges[i].start, 0, __ATOMIC_RELEASE);
    return PyBool_FromLong(__atomic_load_n(&ranges[i].cut, __ATOMIC_ACQUIRE));
}

static PyObject *was_cut(PyObject *module, PyObject *arg) {
    long i = PyLong_AsLong(arg);
    if (i == -1 && PyErr_Occurred()) return NULL;
    if (i < 0 || i >= SLOTS) Py_RETURN_FALSE;
    return PyBool_FromLong(__atomic_load_n(&ranges[i].cut, __ATOMIC_ACQUIRE));
}

static PyMethodDef methods[] = {
    {"guard", guard, METH_O,
     "guard(mapping) -> token: from now until release(token), a SIGBUS on the mapping's pages maps zeros over the "
     "rest of it instead of killing the process (-1: not guarded; the caller must not map)"},
    {"release", release, METH_O, "release(token) -> whether the mapping was cut short while guarded"},
    {"was_cut", was_cut, METH_O, "was_cut(token) -> whether the mapping has been cut short so far"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_map_guard", "Mappings guarded against SIGBUS.", -1, methods};

PyMODINIT_FUNC PyInit__map_guard(void) {
    long page = sysconf(_SC_PAGESIZE);
    page_mask = ~(uintptr_t)((page > 0 ? page : 4096) - 1);
    return PyModule_Create(&moduledef);
}
