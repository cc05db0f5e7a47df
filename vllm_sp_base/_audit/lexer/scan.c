/* scan(source): what the audit's pre-scan needs of a module, lexed exactly.
 *
 * The pre-scan reads every file of the tree to find which classes can have a
 * finding (see _prescan.py). This pass lexes the source once (strings,
 * comments, brackets, continuation lines), so nothing in a string or a comment
 * is taken for code, and returns
 *
 *   (classes, aliases, imported, modules)
 *
 * classes: one (name, bases, written, has_init, init_chains, init_explicit,
 *   init_sets, generated) per `class` statement, anywhere. bases: the last name of each
 *   positional base's leading dotted name, "?" where it does not start with a
 *   name; written: each such dotted name as written (blanks kept: the caller
 *   drops them), "?" likewise. has_init: an `__init__` is defined in its body
 *   (also under if/try). init_chains: every such `__init__` runs its parent's
 *   at body level, unconditionally, before any body-level return or raise:
 *   `super().__init__(`, `super(Own, x).__init__(`, or `Base.__init__(self`
 *   naming the only base as the header writes it. init_explicit: one of them
 *   does it the last way, which runs that base's `__init__` whatever the MRO
 *   puts next. init_sets: some `__init__` touches `self.<name>`, passes `self`
 *   on, calls a `super()` method other than `__init__`, or names setattr,
 *   `__setattr__` or vars (it may set an attribute). A class decorated
 *   `@dataclass` (any dotted name ending so, not `init=False`) with no
 *   `__init__` of its own has the one the decorator writes: it sets the
 *   fields and runs no parent's (has_init, not init_chains, init_sets,
 *   generated).
 * aliases: (alias, original's last name) of each `Alias = dotted.Name` a
 *   module binds (outside any class or function) and of each
 *   `from ... import Name as Alias`, anywhere.
 * imported: (local name, module) of each `from module import` whose module
 *   is absolute, anywhere.
 * modules: (local name, module) of each `import a.b [as c]`, anywhere: `c`
 *   is `a.b`, a plain `a.b` binds `a`.
 *
 * Every approximation here errs towards more candidates. Returns None where
 * the source does not lex, holds a name past ASCII (Python folds those by
 * NFKC, bytes do not), or is indented where Python raises IndentationError
 * (a block with no body, a line indented for no block, a dedent to no open
 * level): the caller then reads the module with `ast`, which says why.
 */

#include "scan.h"

#include <string.h>

/* Room for one more item in a growing array; 0 when out of memory. */
static int room(void **items, Py_ssize_t count, Py_ssize_t *capacity, size_t size) {
    if (count < *capacity) return 1;
    Py_ssize_t grown = *capacity ? *capacity * 2 : 16;
    void *moved = PyMem_RawRealloc(*items, (size_t)grown * size);
    if (moved == NULL) return 0;
    *items = moved;
    *capacity = grown;
    return 1;
}

static int add_pair(Span **pairs, Py_ssize_t *count, Py_ssize_t *capacity, Py_ssize_t a,
                    Py_ssize_t a_end, Py_ssize_t b, Py_ssize_t b_end) {
    if (!room((void **)pairs, *count + 1, capacity, sizeof(Span))) return 0;
    (*pairs)[(*count)++] = (Span){a, a_end, 0};
    (*pairs)[(*count)++] = (Span){b, b_end, 0};
    return 1;
}

static void free_found(Found *found) {
    PyMem_RawFree(found->classes);
    PyMem_RawFree(found->bases);
    PyMem_RawFree(found->aliases);
    PyMem_RawFree(found->imported);
    PyMem_RawFree(found->modules);
}

/* Whether the logical line [at, end) binds `__init__` by assignment anywhere
 * (`__init__ = Base.__init__`, `a = __init__ = f`, `(__init__) = f`, after a
 * `;`, after `if x:` or a one-line class's colon, annotated): a class body
 * binding its __init__, which only ast reads. Over-approximates (a string
 * that spells it too): the file is then pre-scanned by ast, never misread. */
static int binds_init(const unsigned char *s, Py_ssize_t at, Py_ssize_t end) {
    for (Py_ssize_t i = at; i + 8 <= end; i++) {
        if (s[i] != '_' || !lex_is_name(s, i, i + 8, "__init__")) continue;
        if (i > at && (lex_is_ident(s[i - 1]) || s[i - 1] == '.')) continue;
        Py_ssize_t next = i + 8;
        if (next < end && lex_is_ident(s[next])) continue;
        while (next < end && (s[next] == ' ' || s[next] == '\t' || s[next] == ')')) next++;
        if (next < end && s[next] == ':') next = lex_skip_to(s, next + 1, end, "=");  /* annotated */
        if (next + 1 < end && s[next] == '=' && s[next + 1] != '=') return 1;
    }
    return 0;
}

/* Whether the decorator line [at, end) (past the `@`) is a dataclass's,
 * which may write an `__init__`: a dotted name ending in `dataclass`, called
 * or not, parenthesized or not. `init=False` is left to the summaries: the
 * pre-scan may take such a class for a candidate, never miss one. */
static int writes_dataclass_init(const unsigned char *s, Py_ssize_t at, Py_ssize_t end) {
    Py_ssize_t last = 0, last_end = 0;
    int parts = 0;
    Py_ssize_t p = lex_skip_space(s, at, end);
    while (p < end && s[p] == '(') p = lex_skip_space(s, p + 1, end);
    lex_dotted_at(s, p, end, &last, &last_end, &parts);
    return parts && lex_is_name(s, last, last_end, "dataclass");
}

/* The class statement at `at` (past the keyword) up to `end`. */
static int read_class(const unsigned char *s, Py_ssize_t at, Py_ssize_t end, Found *found) {
    Py_ssize_t name = lex_skip_space(s, at, end), stop = lex_name_end(s, name, end);
    if (stop == name) return 1; /* not a class statement after all */
    if (!room((void **)&found->classes, found->class_count, &found->class_capacity, sizeof(Class)))
        return 0;
    Class *cls = &found->classes[found->class_count++];
    memset(cls, 0, sizeof(Class));
    cls->name_start = name;
    cls->name_end = stop;
    cls->first_base = found->base_count;
    cls->only_base = -1;
    Py_ssize_t p = lex_skip_space(s, stop, end);
    if (p < end && s[p] == '[') p = lex_skip_space(s, lex_skip_to(s, p + 1, end, "]") + 1, end); /* type parameters */
    if (p >= end || s[p] != '(') return 1;
    p++;
    for (;;) {
        p = lex_skip_space(s, p, end);
        if (p >= end || s[p] == ')') break;
        Py_ssize_t last = 0, last_end = 0;
        int parts = 0;
        if (s[p] != '*') {
            Py_ssize_t after = lex_dotted_at(s, p, end, &last, &last_end, &parts);
            Py_ssize_t next = lex_skip_space(s, after, end);
            int keyword = parts == 1 && next + 1 < end && s[next] == '=' && s[next + 1] != '=';
            if (!keyword) {
                if (!room((void **)&found->bases, found->base_count, &found->base_capacity, sizeof(Span)))
                    return 0;
                found->bases[found->base_count++] = (Span){parts ? last : -1, last_end, parts > 1, p};
                cls->base_count++;
                cls->only_base = parts ? p : -1;
                cls->only_base_end = last_end;
            }
        }
        p = lex_skip_to(s, p, end, ",)");
        if (p >= end || s[p] == ')') break;
        p++;
    }
    if (cls->base_count != 1) cls->only_base = -1;
    return 1;
}

/* An `as name` at `p`: the name in [*local, *local_end) and what follows it;
 * `p` itself where there is none, -1 where `as` has no name after it. */
static Py_ssize_t read_as(const unsigned char *s, Py_ssize_t p, Py_ssize_t end, Py_ssize_t *local,
                          Py_ssize_t *local_end) {
    Py_ssize_t as_end = lex_name_end(s, p, end);
    if (!lex_is_name(s, p, as_end, "as")) return p;
    *local = lex_skip_space(s, as_end, end);
    *local_end = lex_name_end(s, *local, end);
    if (*local_end == *local) return -1;
    return lex_skip_space(s, *local_end, end);
}

/* `from module import a as b, c` at `at`: its aliases and, for an absolute
 * module, its imported names. */
static int read_from_import(const unsigned char *s, Py_ssize_t at, Py_ssize_t end, Found *found) {
    Py_ssize_t module = lex_skip_space(s, at + 4, end), p = module;
    while (p < end && s[p] == '.') p++;
    Py_ssize_t last, last_end;
    int parts;
    Py_ssize_t module_end = lex_dotted_at(s, p, end, &last, &last_end, &parts);
    if (module_end == module) return 1;
    Py_ssize_t keyword = lex_skip_space(s, module_end, end), keyword_end = lex_name_end(s, keyword, end);
    if (!lex_is_name(s, keyword, keyword_end, "import")) return 1;
    p = lex_skip_space(s, keyword_end, end);
    if (p < end && s[p] == '(') p++;
    int absolute = s[module] != '.';
    for (;;) {
        p = lex_skip_space(s, p, end);
        Py_ssize_t name = p, name_stop = lex_name_end(s, p, end);
        if (name_stop == name) return 1;
        Py_ssize_t local = name, local_end = name_stop;
        p = read_as(s, lex_skip_space(s, name_stop, end), end, &local, &local_end);
        if (p < 0) return 1;
        if (local != name) {
            if ((local_end - local != name_stop - name ||
                 memcmp(s + local, s + name, (size_t)(name_stop - name)) != 0) &&
                !add_pair(&found->aliases, &found->alias_count, &found->alias_capacity, local,
                          local_end, name, name_stop))
                return 0;
        }
        if (absolute && !add_pair(&found->imported, &found->import_count, &found->import_capacity,
                                  local, local_end, module, module_end))
            return 0;
        if (p >= end || s[p] != ',') return 1;
        p++;
    }
}

/* `import a.b as c, d.e` at `at`: (c, a.b) and (d, d) appended to modules. */
static int read_import(const unsigned char *s, Py_ssize_t at, Py_ssize_t end, Found *found) {
    Py_ssize_t p = at + 6;
    for (;;) {
        p = lex_skip_space(s, p, end);
        Py_ssize_t last, last_end;
        int parts;
        Py_ssize_t module = p, module_end = lex_dotted_at(s, p, end, &last, &last_end, &parts);
        if (parts == 0) return 1;
        Py_ssize_t local = module, local_end = lex_name_end(s, module, end);
        p = read_as(s, lex_skip_space(s, module_end, end), end, &local, &local_end);
        if (p < 0) return 1;
        if (local == module) module_end = local_end; /* `import a.b` binds `a`, the module a */
        if (!add_pair(&found->modules, &found->module_count, &found->module_capacity, local, local_end,
                      module, module_end))
            return 0;
        if (p >= end || s[p] != ',') return 1;
        p++;
    }
}

/* `Alias [: annotation] = (dotted.Name)` spanning [at, end): appended to aliases. */
static int read_alias(const unsigned char *s, Py_ssize_t at, Py_ssize_t end, Found *found) {
    Py_ssize_t target_end = lex_name_end(s, at, end);
    if (target_end == at) return 1;
    Py_ssize_t p = lex_skip_space(s, target_end, end);
    if (p < end && s[p] == ':') p = lex_skip_to(s, p + 1, end, "=");
    if (p + 1 >= end || s[p] != '=' || s[p + 1] == '=') return 1;
    p = lex_skip_space(s, p + 1, end);
    int parenthesised = p < end && s[p] == '(';
    if (parenthesised) p = lex_skip_space(s, p + 1, end);
    Py_ssize_t last, last_end;
    int parts;
    p = lex_skip_space(s, lex_dotted_at(s, p, end, &last, &last_end, &parts), end);
    if (parts == 0) return 1;
    if (parts == 1 && (lex_is_name(s, last, last_end, "None") || lex_is_name(s, last, last_end, "True") ||
                       lex_is_name(s, last, last_end, "False")))
        return 1; /* a constant, not a class */
    if (parenthesised) {
        if (p >= end || s[p] != ')') return 1;
        p = lex_skip_space(s, p + 1, end);
    }
    if (p != end) return 1;
    if (last_end - last == target_end - at && memcmp(s + last, s + at, (size_t)(last_end - last)) == 0)
        return 1; /* Name = module.Name binds the same name */
    return add_pair(&found->aliases, &found->alias_count, &found->alias_capacity, at, target_end,
                    last, last_end);
}

static const char *const COMPOUND[] = {"if", "elif", "else", "try", "except", "finally",
                                       "with", "for", "while", "async", NULL};

/* Each simple statement of a logical line: `from` imports anywhere, aliases
 * where the module binds names. */
static int read_statements(const unsigned char *s, const Line *line, int module_level, Found *found) {
    Py_ssize_t at = line->start, end = line->end;
    Py_ssize_t first_end = lex_name_end(s, at, end);
    if (!line->block && first_end > at && first_end - at <= 7 && strchr("iefwta", s[at]) != NULL) {
        for (const char *const *word = COMPOUND; *word; word++) {
            if (lex_is_name(s, at, first_end, *word)) {
                Py_ssize_t colon = lex_skip_to(s, first_end, end, ":");
                if (colon >= end) return 1;
                at = lex_skip_space(s, colon + 1, end); /* `if x: Alias = Name` */
                break;
            }
        }
    }
    while (at < end) {
        Py_ssize_t stop = memchr(s + at, ';', (size_t)(end - at)) ? lex_skip_to(s, at, end, ";") : end;
        Py_ssize_t word_end = lex_name_end(s, at, stop);
        if (lex_is_name(s, at, word_end, "from")) {
            if (!read_from_import(s, at, stop, found)) return 0;
        } else if (lex_is_name(s, at, word_end, "import")) {
            if (!read_import(s, at, stop, found)) return 0;
        } else if (module_level && !read_alias(s, at, stop, found)) {
            return 0;
        }
        at = stop < end ? lex_skip_space(s, stop + 1, end) : end;
    }
    return 1;
}

typedef struct {
    long indent;
    Py_ssize_t class_index; /* -1: a function */
} Scope;

#define MAX_SCOPES 200


/* Lex the module into `found` (and, given `digest`, fold each logical line
 * into it: complete where the lines ran out, whatever the scan made of them):
 * 1, 0 where it does not lex, -1 out of memory. Touches no Python object: it
 * runs without the GIL. */
static int find(const unsigned char *s, Py_ssize_t n, Found *found, CodeDigest *digest) {
    Lexer L = {s, n, 0, 1, 0};
    Scope scopes[MAX_SCOPES];
    int depth = 0, status;
    Init init = {-1, 0, 0, 0, 0, 0, 0};
    Line line;
    /* The indentation of each open block, as CPython's tokenizer keeps it: a
     * line where it would raise IndentationError makes the scan unsure, and
     * the caller's `ast` then says what is wrong, as --parse-all does. */
    long indents[MAX_SCOPES];
    int levels = 0, opened = 0;
    int dataclass_next = 0; /* the decorators just read write a dataclass's __init__ */
    while ((status = lex_next_line(&L, &line)) == 1) {
        if (digest != NULL) code_digest_line(digest, s, &line);
        long top = levels ? indents[levels - 1] : 0;
        if (opened ? line.indent <= top : line.indent > top) return 0; /* expected / unexpected indent */
        if (opened) {
            if (levels == MAX_SCOPES) return 0;
            indents[levels++] = line.indent;
        }
        while (levels && line.indent < indents[levels - 1]) levels--;
        if (line.indent != (levels ? indents[levels - 1] : 0)) return 0; /* unindent does not match */
        opened = line.block;
        if (init.class_index >= 0) {
            if (line.indent > init.def_indent)
                read_init_line(s, &line, found, &init);
            else
                finish_init(&init, found);
        }
        while (depth > 0 && scopes[depth - 1].indent >= line.indent) depth--;
        Py_ssize_t name = -1;
        unsigned char first = s[line.start];
        int decorated = dataclass_next;
        dataclass_next = first == '@' && (decorated || writes_dataclass_init(s, line.start + 1, line.end));
        if (first == 'c' && lex_word_at(s, line.end, line.start, "class")) {
            if (binds_init(s, line.start, line.end)) return 0; /* `class B(A): __init__ = ...`: ast reads it */
            Py_ssize_t before = found->class_count;
            if (!read_class(s, line.start + 5, line.end, found)) return -1;
            if (found->class_count > before) found->classes[before].dataclass = decorated;
            if (line.block) {
                if (depth == MAX_SCOPES) return 0;
                scopes[depth++] = (Scope){line.indent, found->class_count - 1};
            }
        } else if ((first == 'd' || first == 'a') && (name = lex_def_name_at(s, line.end, line.start)) >= 0) {
            Py_ssize_t name_stop = lex_name_end(s, name, line.end);
            if (depth > 0 && scopes[depth - 1].class_index >= 0 && lex_is_name(s, name, name_stop, "__init__")) {
                if (init.class_index >= 0) return 0; /* a class defined in an __init__ has one too: ast reads it */
                finish_init(&init, found);
                start_init(s, &line, name_stop, scopes[depth - 1].class_index, found, &init);
            }
            if (line.block) {
                if (depth == MAX_SCOPES) return 0;
                scopes[depth++] = (Scope){line.indent, -1};
            }
        } else if (depth > 0 && scopes[depth - 1].class_index >= 0 && binds_init(s, line.start, line.end)) {
            return 0; /* `__init__ = Base.__init__` in a class body: ast reads it */
        } else if (!read_statements(s, &line, depth == 0, found)) {
            return -1;
        }
    }
    /* The lines ran out: the digest is whole, even where the scan declines
     * what it found (an unsure lexing, a name Python folds by NFKC). */
    if (digest != NULL) digest->complete = status == 0;
    if (status < 0 || L.failed || L.non_ascii || opened) return 0; /* opened: a block with no body */
    finish_init(&init, found);
    return 1;
}

static PyObject *text(const unsigned char *s, Py_ssize_t start, Py_ssize_t end) {
    if (start < 0) return PyUnicode_FromString("?");
    return PyUnicode_DecodeUTF8((const char *)s + start, end - start, "replace");
}

static PyObject *pairs(const unsigned char *s, const Span *items, Py_ssize_t count) {
    PyObject *list = PyList_New(count / 2);
    for (Py_ssize_t k = 0; list != NULL && k < count; k += 2) {
        PyObject *pair = Py_BuildValue("(NN)", text(s, items[k].start, items[k].end),
                                       text(s, items[k + 1].start, items[k + 1].end));
        if (pair == NULL) Py_CLEAR(list);
        else PyList_SET_ITEM(list, k / 2, pair);
    }
    return list;
}

static PyObject *classes(const unsigned char *s, const Found *found) {
    PyObject *list = PyList_New(found->class_count);
    for (Py_ssize_t k = 0; list != NULL && k < found->class_count; k++) {
        const Class *cls = &found->classes[k];
        PyObject *bases = PyTuple_New(cls->base_count), *written = PyTuple_New(cls->base_count);
        PyObject *item = NULL;
        if (bases != NULL && written != NULL) {
            Py_ssize_t b = 0;
            for (; b < cls->base_count; b++) {
                const Span *base = &found->bases[cls->first_base + b];
                PyObject *name = text(s, base->start, base->end);
                if (name == NULL) break;
                PyTuple_SET_ITEM(bases, b, name);
                PyObject *as_written = text(s, base->start < 0 ? -1 : base->written, base->end);
                if (as_written == NULL) break;
                PyTuple_SET_ITEM(written, b, as_written);
            }
            int generated = cls->dataclass && !cls->has_init; /* the decorator's __init__ */
            if (b == cls->base_count)
                item = Py_BuildValue("(NOOOOOOO)", text(s, cls->name_start, cls->name_end), bases,
                                     written, cls->has_init || generated ? Py_True : Py_False,
                                     cls->init_chains && !generated ? Py_True : Py_False,
                                     cls->init_explicit && !generated ? Py_True : Py_False,
                                     cls->init_sets || generated ? Py_True : Py_False,
                                     generated ? Py_True : Py_False);
        }
        Py_XDECREF(bases);
        Py_XDECREF(written);
        if (item == NULL) Py_CLEAR(list);
        else PyList_SET_ITEM(list, k, item);
    }
    return list;
}

int scan_find(const unsigned char *s, Py_ssize_t n, Found *found, CodeDigest *digest) {
    memset(found, 0, sizeof(*found));
    if (digest != NULL) code_digest_start(digest);
    return find(s, n, found, digest);
}

PyObject *scan_result(const unsigned char *s, int status, Found *found) {
    PyObject *result = NULL;
    if (status < 0) {
        PyErr_NoMemory();
    } else if (status == 0) {
        result = Py_NewRef(Py_None);
    } else {
        result = Py_BuildValue("(NNNN)", classes(s, found), pairs(s, found->aliases, found->alias_count),
                               pairs(s, found->imported, found->import_count),
                               pairs(s, found->modules, found->module_count));
    }
    free_found(found);
    return result;
}

PyObject *scan(PyObject *module, PyObject *args) {
    Py_buffer source;
    if (!PyArg_ParseTuple(args, "y*:scan", &source)) return NULL;
    const unsigned char *s = source.buf;
    Found found;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = scan_find(s, source.len, &found, NULL);
    Py_END_ALLOW_THREADS
    PyObject *result = scan_result(s, status, &found);
    PyBuffer_Release(&source);
    return result;
}
