/* spells_any(source, needles): whether the source holds any of the byte
 * strings, searched without the GIL. The pre-scan's threads ask it of each
 * file for the markers of a suppression comment (`SPB001`, `vllm-sp-base:`),
 * so that the end of a run, which reports the ones that hid nothing, reads
 * only the files that spell one (a search of every file after the check
 * would run alone, on one core). */

#include "lex.h"

#define MAX_NEEDLES 8

/* memmem where the C library has it (Python.h asks glibc for it), else its first byte by memchr. */
static int holds(const char *s, Py_ssize_t n, const char *needle, Py_ssize_t length) {
#if defined(__GLIBC__) || defined(__APPLE__) || defined(__FreeBSD__)
    return memmem(s, (size_t)n, needle, (size_t)length) != NULL;
#else
    const char *end = s + n - length + 1, *at = s;
    while (at < end && (at = memchr(at, needle[0], (size_t)(end - at))) != NULL) {
        if (memcmp(at, needle, (size_t)length) == 0) return 1;
        at++;
    }
    return 0;
#endif
}

PyObject *spells_any(PyObject *module, PyObject *args) {
    (void)module;
    Py_buffer source;
    PyObject *needles;
    if (!PyArg_ParseTuple(args, "y*O!:spells_any", &source, &PyTuple_Type, &needles)) return NULL;
    Py_ssize_t count = PyTuple_GET_SIZE(needles);
    const char *what[MAX_NEEDLES];
    Py_ssize_t length[MAX_NEEDLES];
    if (count > MAX_NEEDLES) {
        PyBuffer_Release(&source);
        PyErr_SetString(PyExc_ValueError, "spells_any: too many needles");
        return NULL;
    }
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *needle = PyTuple_GET_ITEM(needles, k);
        if (!PyBytes_Check(needle) || PyBytes_GET_SIZE(needle) == 0) {
            PyBuffer_Release(&source);
            PyErr_SetString(PyExc_TypeError, "spells_any: needles are non-empty bytes");
            return NULL;
        }
        what[k] = PyBytes_AS_STRING(needle);
        length[k] = PyBytes_GET_SIZE(needle);
    }
    int found = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < count && !found; k++)
        found = source.len >= length[k] && holds(source.buf, source.len, what[k], length[k]);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&source);
    return PyBool_FromLong(found);
}
