/* cut_bodies(source, keep, owners=None): the module with function bodies cut out.
 *
 * The audit needs a module's imports, classes, bases, class-level names and
 * method signatures from every file it summarises, but a method's body only
 * when the rule asks about it: most bodies are never looked at. Parsing them
 * all was most of a cold run. This pass lexes Python source (strings with
 * their prefixes, f-string fields as in PEP 701, comments, brackets,
 * continuation lines) to find each `def` whose body is an indented block, and
 * returns
 *
 *   (skeleton, cuts)
 *
 * where `skeleton` is the source with each such body replaced by as many empty
 * lines as it had (so every line number is unchanged) and ` ...` after the
 * header's colon, and `cuts` has one tuple per body:
 *
 *   (def_line, def_col, body_start, body_end, body_line, non_ascii)
 *
 * def_line/def_col: where the `def` (or `async`) keyword is, as `ast` reports
 * it; body_start/body_end: byte offsets of the body's lines; body_line: the
 * line body_start is on; non_ascii: whether the body has a byte >= 0x80 (an
 * identifier there may be spelled in a way a byte search cannot see).
 *
 * Functions named in `keep` (a tuple of bytes) are left whole, with every
 * function nested in them; with `owners` (a set of class names), only where
 * defined in the body of a class named there. Nothing is cut inside a body
 * that is cut.
 *
 * The summary reads no more of a signature than its first parameter's name
 * (what `self` is called), so each block `def`'s parameters, annotations
 * and defaults are cut too: `def f(self, x: int = 1) -> T:` becomes
 * `def f(self):`, with the header's line breaks kept inside the parentheses.
 *
 * Returns None for anything it does not lex with certainty (an unterminated
 * string, unbalanced brackets, a carriage return, a block header with no
 * body): the caller then parses the whole file, which reports real errors.
 */


#include "lex.h"

#include <string.h>

typedef struct {
    long def_line, def_col;
    Py_ssize_t colon, body_start, body_end;
    Py_ssize_t paren, first, first_end; /* the parameters' `(`, the first one's name; paren -1: left */
    long body_line;
    int non_ascii;
    int kept; /* a body left whole: nothing in it is cut either */
} Cut;

static int kept(PyObject *keep, const unsigned char *name, Py_ssize_t length) {
    Py_ssize_t count = PyTuple_GET_SIZE(keep);
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *item = PyTuple_GET_ITEM(keep, k);
        if (PyBytes_Check(item) && PyBytes_GET_SIZE(item) == length &&
            memcmp(PyBytes_AS_STRING(item), name, (size_t)length) == 0)
            return 1;
    }
    return 0;
}

typedef struct {
    Cut *items;
    Py_ssize_t count, capacity;
} Cuts;

static int push(Cuts *cuts, Cut cut) {
    if (cuts->count == cuts->capacity) {
        Py_ssize_t capacity = cuts->capacity ? cuts->capacity * 2 : 64;
        Cut *grown = PyMem_Realloc(cuts->items, (size_t)capacity * sizeof(Cut));
        if (grown == NULL) return 0;
        cuts->items = grown;
        cuts->capacity = capacity;
    }
    cuts->items[cuts->count++] = cut;
    return 1;
}

#define MAX_CLASSES 100

typedef struct {
    long indent;
    Py_ssize_t name, name_end;
} Owner;

/* Whether the function at `name` stays whole: named in `keep` and, where
 * `owners` is a set, defined in the body of a class named in it. -1: error. */
static int stays_whole(const unsigned char *s, Py_ssize_t name, Py_ssize_t end, PyObject *keep,
                       PyObject *owners, const Owner *classes, int depth) {
    if (!kept(keep, s + name, end - name)) return 0;
    if (owners == Py_None) return 1;
    if (depth == 0) return 0;
    const Owner *owner = &classes[depth - 1];
    PyObject *owner_name = PyUnicode_DecodeUTF8((const char *)s + owner->name,
                                                owner->name_end - owner->name, "replace");
    if (owner_name == NULL) return -1;
    int found = PySet_Contains(owners, owner_name);
    Py_DECREF(owner_name);
    return found;
}

/* Lex the whole module and collect the cuts; 0 when it cannot be lexed. */
static int find_cuts(Lexer *L, PyObject *keep, PyObject *owners, Cuts *cuts) {
    const unsigned char *s = L->s;
    int cutting = 0, found, depth = 0;
    long cut_indent = 0, body_statements = 0;
    Owner classes[MAX_CLASSES]; /* the classes whose bodies the line is in */
    Cut open = {0};
    Line line;
    while ((found = lex_next_line(L, &line)) == 1) {
        if (cutting) {
            if (line.indent > cut_indent) {
                body_statements++;
                continue;
            }
            if (body_statements == 0) return 0; /* a header with no body */
            open.body_end = line.physical;
            if (!push(cuts, open)) return -1;
            cutting = 0;
        }
        while (depth > 0 && classes[depth - 1].indent >= line.indent) depth--;
        if (!line.block) continue;
        if (lex_word_at(s, line.end, line.start, "class")) {
            if (depth == MAX_CLASSES) return 0;
            Py_ssize_t class_name = lex_skip_space(s, line.start + 5, line.end);
            classes[depth++] = (Owner){line.indent, class_name, lex_name_end(s, class_name, line.end)};
            continue;
        }
        Py_ssize_t name = lex_def_name_at(s, line.end, line.start);
        if (name < 0) continue;
        Py_ssize_t end = name;
        while (end < line.end && lex_is_ident(s[end])) end++;
        if (end == name) continue;
        cutting = 1;
        cut_indent = line.indent;
        body_statements = 0;
        open.def_line = line.line;
        open.def_col = (long)(line.start - line.physical);
        open.colon = line.last;
        open.body_start = L->i;
        open.body_line = L->line;
        open.kept = stays_whole(s, name, end, keep, owners, classes, depth);
        if (open.kept < 0) return -1;
        open.paren = lex_skip_blanks(s, line.end, end);
        if (open.paren >= line.end || s[open.paren] != '(') {
            open.paren = -1; /* type parameters first: left as written */
        } else {
            open.first = lex_skip_space(s, open.paren + 1, line.end);
            open.first_end = lex_name_end(s, open.first, line.end);
        }
    }
    if (found < 0 || L->failed) return 0;
    if (cutting) {
        if (body_statements == 0) return 0;
        open.body_end = L->n;
        if (!push(cuts, open)) return -1;
    }
    return 1;
}

PyObject *cut_bodies(PyObject *module, PyObject *args) {
    Py_buffer source;
    PyObject *keep;
    PyObject *owners = Py_None;
    if (!PyArg_ParseTuple(args, "y*O!|O:cut_bodies", &source, &PyTuple_Type, &keep, &owners)) return NULL;
    if (owners != Py_None && !PyAnySet_Check(owners)) {
        PyBuffer_Release(&source);
        PyErr_SetString(PyExc_TypeError, "cut_bodies: owners must be a set or None");
        return NULL;
    }
    Lexer L = {(const unsigned char *)source.buf, source.len, 0, 1, 0};
    Cuts cuts = {NULL, 0, 0};
    PyObject *result = NULL, *skeleton = NULL, *list = NULL;
    int found = find_cuts(&L, keep, owners, &cuts);
    if (found < 0) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    if (found == 0) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    const unsigned char *s = L.s;
    Py_ssize_t size = source.len, bodies = 0;
    for (Py_ssize_t k = 0; k < cuts.count; k++) {
        Cut *cut = &cuts.items[k];
        if (cut->paren >= 0) {
            Py_ssize_t breaks = 0;
            for (Py_ssize_t p = cut->paren + 1; p < cut->colon; p++) breaks += s[p] == '\n';
            size += (cut->first_end - cut->first) + breaks + 1 - (cut->colon - cut->paren - 1);
        }
        if (cut->kept) continue;
        bodies++;
        Py_ssize_t lines = 0;
        int non_ascii = 0;
        for (Py_ssize_t p = cut->body_start; p < cut->body_end; p++) {
            lines += s[p] == '\n';
            non_ascii |= s[p] >= 0x80;
        }
        cut->non_ascii = non_ascii;
        size += 4 + lines - (cut->body_end - cut->body_start);
    }
    skeleton = PyBytes_FromStringAndSize(NULL, size);
    list = PyList_New(bodies);
    if (skeleton == NULL || list == NULL) goto done;
    char *out = PyBytes_AS_STRING(skeleton);
    Py_ssize_t from = 0, listed = 0;
    for (Py_ssize_t k = 0; k < cuts.count; k++) {
        Cut *cut = &cuts.items[k];
        if (cut->paren >= 0) { /* `(first` + the header's line breaks + `)` */
            memcpy(out, s + from, (size_t)(cut->paren + 1 - from));
            out += cut->paren + 1 - from;
            memcpy(out, s + cut->first, (size_t)(cut->first_end - cut->first));
            out += cut->first_end - cut->first;
            for (Py_ssize_t p = cut->paren + 1; p < cut->colon; p++)
                if (s[p] == '\n') *out++ = '\n';
            *out++ = ')';
            from = cut->colon;
        }
        if (cut->kept) continue;
        memcpy(out, s + from, (size_t)(cut->colon + 1 - from));
        out += cut->colon + 1 - from;
        memcpy(out, " ...", 4);
        out += 4;
        memcpy(out, s + cut->colon + 1, (size_t)(cut->body_start - cut->colon - 1));
        out += cut->body_start - cut->colon - 1;
        for (Py_ssize_t p = cut->body_start; p < cut->body_end; p++)
            if (s[p] == '\n') *out++ = '\n';
        from = cut->body_end;
        PyObject *item = Py_BuildValue("(llnnli)", cut->def_line, cut->def_col, cut->body_start,
                                       cut->body_end, cut->body_line, cut->non_ascii);
        if (item == NULL) goto done;
        PyList_SET_ITEM(list, listed++, item);
    }
    memcpy(out, s + from, (size_t)(source.len - from));
    result = PyTuple_Pack(2, skeleton, list);
done:
    Py_XDECREF(skeleton);
    Py_XDECREF(list);
    PyMem_Free(cuts.items);
    PyBuffer_Release(&source);
    return result;
}
