/* code_digest: a digest of a module's statements and where each one is,
 * blind to comment-only and blank lines and to a comment after a statement.
 * The audit reads nothing else of a file but `# noqa` comments (the caller
 * adds those), so two versions of a file with one digest give one result:
 * appending or editing a comment keeps a cached result valid, while anything
 * that moves a statement (a line inserted above it) changes the digest. */

#include "lex.h"

#include <stdint.h>

#define FNV_PRIME 1099511628211ULL

static uint64_t fnv(uint64_t h, const unsigned char *p, Py_ssize_t n) {
    for (Py_ssize_t k = 0; k < n; k++) {
        h ^= p[k];
        h *= FNV_PRIME;
    }
    return h;
}

PyObject *code_digest(PyObject *module, PyObject *args) {
    (void)module;
    Py_buffer source;
    if (!PyArg_ParseTuple(args, "y*", &source)) return NULL;
    const unsigned char *s = (const unsigned char *)source.buf;
    /* Two FNV-1a streams from different bases: 128 bits. */
    uint64_t a = 14695981039346656037ULL, b = 0x6c62272e07bb0142ULL;
    int status;
    Py_BEGIN_ALLOW_THREADS
    Lexer L = {s, source.len, 0, 1, 0};
    Line line;
    while ((status = lex_next_line(&L, &line)) == 1) {
        /* The statement's line number, then its bytes from the line's start
         * (its indentation) to its last significant character. */
        unsigned char number[sizeof(long)];
        memcpy(number, &line.line, sizeof(long));
        a = fnv(a, number, (Py_ssize_t)sizeof(long));
        b = fnv(b, number, (Py_ssize_t)sizeof(long));
        a = fnv(a, s + line.physical, line.last + 1 - line.physical);
        b = fnv(b ^ 0xff, s + line.physical, line.last + 1 - line.physical);
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&source);
    if (status < 0) Py_RETURN_NONE; /* not lexed with certainty: the caller uses the bytes */
    unsigned char out[16];
    memcpy(out, &a, 8);
    memcpy(out + 8, &b, 8);
    return PyBytes_FromStringAndSize((const char *)out, 16);
}
