/* vllm_sp_base._audit._lexer: the audit's compiled passes over Python source. */

#include "lex.h"

static PyMethodDef methods[] = {
    {"cut_bodies", cut_bodies, METH_VARARGS,
     "cut_bodies(source, keep) -> (skeleton, cuts) or None: see bodies.c."},
    {"scan", scan, METH_VARARGS, "scan(source) -> (classes, aliases, imported, modules) or None: see scan.c."},
    {"code_digest", code_digest, METH_VARARGS,
     "code_digest(source) -> 16 bytes, or None where it does not lex: see digest.c."},
    {"spells_any", spells_any, METH_VARARGS,
     "spells_any(source, needles) -> whether the source holds any of them: see spells.c."},
#ifndef _WIN32
    {"read_and_scan", read_and_scan, METH_VARARGS,
     "read_and_scan(path, limit) -> (bytes, scan(bytes)), or (None, size) past limit: see read.c."},
#endif
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_lexer", "The audit's compiled passes over Python source.", -1, methods,
};

PyMODINIT_FUNC PyInit__lexer(void) {
    lex_init();
    return PyModule_Create(&module_def);
}
