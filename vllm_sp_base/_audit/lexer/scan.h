/* What scan.c finds in a module, shared with inits.c. */

#ifndef VLLM_SP_BASE_SCAN_H
#define VLLM_SP_BASE_SCAN_H

#include "lex.h"

/* What a scan finds, as offsets: the lexing runs without the GIL, and the
 * Python objects are made afterwards. */
typedef struct {
    Py_ssize_t start, end; /* start -1: a base that is no name ("?") */
    int dotted;
    Py_ssize_t written; /* a base's first name: [written, end) is its dotted name as written */
} Span;

typedef struct {
    Py_ssize_t name_start, name_end;
    Py_ssize_t first_base, base_count; /* in Found.bases */
    Py_ssize_t only_base, only_base_end; /* the one base's dotted name, if exactly one; else -1 */
    int has_init, init_chains, init_sets;
    int init_explicit; /* some __init__ chains by naming its base (`Base.__init__(self)`), not by super() */
    int dataclass; /* decorated `@dataclass` (not `init=False`): the decorator writes an __init__ it has none of */
} Class;

typedef struct {
    Class *classes;
    Span *bases, *aliases, *imported, *modules; /* aliases, imported, modules: pairs of spans */
    Py_ssize_t class_count, class_capacity, base_count, base_capacity;
    Py_ssize_t alias_count, alias_capacity, import_count, import_capacity;
    Py_ssize_t module_count, module_capacity;
} Found;

typedef struct {
    Py_ssize_t class_index;  /* -1: no __init__ is being read */
    long def_indent, body_indent;
    Py_ssize_t self_start, self_end;
    int chains, sets; /* chains: 0, 1 by super(), 2 by naming the base */
    int ended; /* a `return` or `raise` (nested too) came first: what follows may not run */
} Init;

/* Lex the module into `found` (no Python object touched: it runs without the
 * GIL): 1, 0 where it does not lex, -1 out of memory. Given `digest`, the
 * same pass folds code_digest's digest into it (see its `complete`). */
int scan_find(const unsigned char *s, Py_ssize_t n, Found *found, CodeDigest *digest);
/* scan()'s answer for what scan_find returned (with the GIL); frees `found`. */
PyObject *scan_result(const unsigned char *s, int status, Found *found);

/* The `def __init__` logical line of the class at `index`: its first
 * parameter's name, and a body on the same line. */
void start_init(const unsigned char *s, const Line *line, Py_ssize_t name_stop, Py_ssize_t index,
                Found *found, Init *init);
/* One more logical line of that `__init__`'s body. */
void read_init_line(const unsigned char *s, const Line *line, Found *found, Init *init);
/* The `__init__` ends: what it showed goes to its class. */
void finish_init(Init *init, Found *found);

#endif
