/* code_digest: a digest of a module's statements and where each one is,
 * blind to comment-only and blank lines and to a comment after a statement.
 * The audit reads nothing else of a file but `# noqa` comments (the caller
 * adds those), so two versions of a file with one digest give one result:
 * appending or editing a comment keeps a cached result valid, while anything
 * that moves a statement (a line inserted above it) changes the digest. */

#include "lex.h"

PyObject *code_digest(PyObject *module, PyObject *args) {
    (void)module;
    Py_buffer source;
    if (!PyArg_ParseTuple(args, "y*", &source)) return NULL;
    const unsigned char *s = (const unsigned char *)source.buf;
    CodeDigest digest;
    code_digest_start(&digest);
    int status;
    Py_BEGIN_ALLOW_THREADS
    Lexer L = {s, source.len, 0, 1, 0};
    Line line;
    while ((status = lex_next_line(&L, &line)) == 1) code_digest_line(&digest, s, &line);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&source);
    if (status < 0) Py_RETURN_NONE; /* not lexed with certainty: the caller uses the bytes */
    return code_digest_bytes(&digest);
}
