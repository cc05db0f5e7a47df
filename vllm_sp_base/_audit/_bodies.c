/* cut_bodies(source, keep): the module with every function body cut out.
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
 * function nested in them. Nothing is cut inside a body that is cut.
 *
 * Returns None for anything it does not lex with certainty (an unterminated
 * string, unbalanced brackets, a carriage return, a block header with no
 * body): the caller then parses the whole file, which reports real errors.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

typedef struct {
    const unsigned char *s;
    Py_ssize_t n;
    Py_ssize_t i;
    long line;
    int failed;
} Lexer;

static int is_ident(unsigned char c) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c >= 0x80;
}

static int skip_field(Lexer *L);

/* A string whose opening quote is at L->i. `templated`: f- or t-string;
 * `raw`: r-prefixed. Leaves L->i after the closing quote. */
static int skip_string(Lexer *L, int templated, int raw) {
    const unsigned char *s = L->s;
    unsigned char quote = s[L->i];
    int triple = L->i + 2 < L->n && s[L->i + 1] == quote && s[L->i + 2] == quote;
    L->i += triple ? 3 : 1;
    while (L->i < L->n) {
        unsigned char c = s[L->i];
        if (c == '\\') {
            if (L->i + 1 >= L->n) break;
            unsigned char next = s[L->i + 1];
            if (templated && (next == '{' || next == '}')) {
                L->i += 1; /* a backslash does not escape a field's brace */
                continue;
            }
            if (templated && !raw && next == 'N' && L->i + 2 < L->n && s[L->i + 2] == '{') {
                /* \N{NAME}: braces of a named escape, not a field */
                Py_ssize_t close = L->i + 3;
                while (close < L->n && s[close] != '}' && s[close] != quote && s[close] != '\n')
                    close++;
                if (close >= L->n || s[close] != '}') break;
                L->i = close + 1;
                continue;
            }
            if (next == '\n') L->line++;
            L->i += 2;
            continue;
        }
        if (c == '\n') {
            if (!triple) break;
            L->line++;
            L->i++;
            continue;
        }
        if (c == quote) {
            if (!triple) {
                L->i++;
                return 1;
            }
            if (L->i + 2 < L->n && s[L->i + 1] == quote && s[L->i + 2] == quote) {
                L->i += 3;
                return 1;
            }
            L->i++;
            continue;
        }
        if (templated && c == '{') {
            if (L->i + 1 < L->n && s[L->i + 1] == '{') {
                L->i += 2;
                continue;
            }
            L->i++;
            if (!skip_field(L)) return 0;
            continue;
        }
        L->i++;
    }
    L->failed = 1;
    return 0;
}

/* An identifier at L->i; if it is a string prefix directly followed by a
 * quote, the string too. */
static int skip_name_or_string(Lexer *L) {
    const unsigned char *s = L->s;
    Py_ssize_t start = L->i;
    while (L->i < L->n && is_ident(s[L->i])) L->i++;
    if (L->i < L->n && (s[L->i] == '"' || s[L->i] == '\'')) {
        Py_ssize_t length = L->i - start;
        int templated = 0, raw = 0, prefix = length <= 2;
        for (Py_ssize_t k = start; k < L->i && prefix; k++) {
            switch (s[k]) {
                case 'f': case 'F': case 't': case 'T': templated = 1; break;
                case 'r': case 'R': raw = 1; break;
                case 'b': case 'B': case 'u': case 'U': break;
                default: prefix = 0;
            }
        }
        if (prefix) return skip_string(L, templated, raw);
    }
    return 1;
}

/* The code of an f-string field after its `{`, through the closing `}`. */
static int skip_field(Lexer *L) {
    const unsigned char *s = L->s;
    int depth = 0;
    while (L->i < L->n) {
        unsigned char c = s[L->i];
        if (c == '"' || c == '\'') {
            if (!skip_string(L, 0, 0)) return 0;
        } else if (is_ident(c)) {
            if (!skip_name_or_string(L)) return 0;
        } else if (c == '(' || c == '[' || c == '{') {
            depth++;
            L->i++;
        } else if (c == ')' || c == ']') {
            depth--;
            L->i++;
        } else if (c == '}') {
            L->i++;
            if (depth == 0) return 1;
            depth--;
        } else if (c == ':' && depth == 0) {
            /* format spec: literal text with nested fields, to the `}` */
            L->i++;
            while (L->i < L->n && s[L->i] != '}') {
                if (s[L->i] == '{') {
                    L->i++;
                    if (!skip_field(L)) return 0;
                } else {
                    if (s[L->i] == '\n') L->line++;
                    L->i++;
                }
            }
            if (L->i >= L->n) break;
            L->i++;
            return 1;
        } else if (c == '#') {
            while (L->i < L->n && s[L->i] != '\n') L->i++;
        } else {
            if (c == '\n') L->line++;
            L->i++;
        }
    }
    L->failed = 1;
    return 0;
}

typedef struct {
    long def_line, def_col;
    Py_ssize_t colon, body_start, body_end;
    long body_line;
    int non_ascii;
    int kept; /* a body left whole: nothing in it is cut either */
} Cut;

static int word_at(const unsigned char *s, Py_ssize_t n, Py_ssize_t at, const char *word) {
    size_t length = strlen(word);
    if (at + (Py_ssize_t)length >= n || memcmp(s + at, word, length) != 0) return 0;
    unsigned char after = s[at + length];
    return after == ' ' || after == '\t' || after == '\f' || after == '\\';
}

static Py_ssize_t skip_blanks(const unsigned char *s, Py_ssize_t n, Py_ssize_t at) {
    for (;;) {
        while (at < n && (s[at] == ' ' || s[at] == '\t' || s[at] == '\f')) at++;
        if (at + 1 < n && s[at] == '\\' && s[at + 1] == '\n') {
            at += 2;
            continue;
        }
        return at;
    }
}

/* The `def` (or `async def`) at the start of a logical line: the offset of
 * its name, or -1. */
static Py_ssize_t def_name_at(const unsigned char *s, Py_ssize_t n, Py_ssize_t at) {
    if (word_at(s, n, at, "async")) at = skip_blanks(s, n, at + 5);
    if (!word_at(s, n, at, "def")) return -1;
    return skip_blanks(s, n, at + 3);
}

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

/* Lex the whole module and collect the cuts; 0 when it cannot be lexed. */
static int find_cuts(Lexer *L, PyObject *keep, Cuts *cuts) {
    const unsigned char *s = L->s;
    Py_ssize_t n = L->n;
    int depth = 0;
    int at_line_start = 1;
    /* the logical line being read */
    int header = 0;           /* it starts with a def */
    int header_kept = 0;      /* named in `keep` */
    long header_line = 0, header_col = 0, header_indent = 0;
    Py_ssize_t colon = -1;    /* its first colon outside brackets */
    int after_colon = 0;      /* code follows that colon on the same line */
    /* the body being cut */
    int cutting = 0;
    long cut_indent = 0;
    long body_statements = 0;
    Cut open = {0};

    while (L->i < n) {
        unsigned char c = s[L->i];
        if (at_line_start) {
            Py_ssize_t line_start = L->i, j = L->i;
            long column = 0;
            while (j < n && (s[j] == ' ' || s[j] == '\t' || s[j] == '\f')) {
                column = s[j] == '\t' ? (column / 8 + 1) * 8 : (s[j] == '\f' ? 0 : column + 1);
                j++;
            }
            if (j >= n) {
                L->i = j;
                break;
            }
            if (s[j] == '\n' || s[j] == '#' || (s[j] == '\\' && j + 1 < n && s[j + 1] == '\n')) {
                /* a blank or comment-only line: no statement starts here */
                if (s[j] == '\\') {
                    L->i = j; /* a lone continuation joins the next line */
                    at_line_start = 0;
                    continue;
                }
                while (j < n && s[j] != '\n') j++;
                if (j < n) {
                    L->line++;
                    j++;
                }
                L->i = j;
                continue;
            }
            at_line_start = 0;
            L->i = j;
            if (cutting) {
                if (column > cut_indent) {
                    body_statements++;
                } else {
                    if (body_statements == 0) return 0; /* a header with no body */
                    open.body_end = line_start;
                    if (!open.kept && !push(cuts, open)) return -1;
                    cutting = 0;
                }
            }
            if (!cutting) {
                Py_ssize_t name = def_name_at(s, n, j);
                if (name >= 0) {
                    Py_ssize_t end = name;
                    while (end < n && is_ident(s[end])) end++;
                    header = end > name;
                    header_kept = header && kept(keep, s + name, end - name);
                    header_line = L->line;
                    header_col = (long)(j - line_start);
                    header_indent = column;
                    colon = -1;
                    after_colon = 0;
                }
            }
            continue;
        }
        switch (c) {
            case '\n':
                L->line++;
                L->i++;
                if (depth == 0) {
                    if (header && colon >= 0 && !after_colon) {
                        cutting = 1;
                        cut_indent = header_indent;
                        body_statements = 0;
                        open.def_line = header_line;
                        open.def_col = header_col;
                        open.colon = colon;
                        open.body_start = L->i;
                        open.body_line = L->line;
                        open.kept = header_kept;
                    }
                    header = 0;
                    at_line_start = 1;
                }
                break;
            case '\\':
                if (L->i + 1 < n && s[L->i + 1] == '\n') {
                    L->line++;
                    L->i += 2;
                } else {
                    return 0;
                }
                break;
            case '#':
                while (L->i < n && s[L->i] != '\n') L->i++;
                break;
            case '"':
            case '\'':
                if (header && colon >= 0) after_colon = 1;
                if (!skip_string(L, 0, 0)) return 0;
                break;
            case '(': case '[': case '{':
                depth++;
                L->i++;
                break;
            case ')': case ']': case '}':
                if (--depth < 0) return 0;
                L->i++;
                break;
            case ':':
                if (header && depth == 0 && colon < 0) {
                    colon = L->i;
                } else if (header && colon >= 0) {
                    after_colon = 1;
                }
                L->i++;
                break;
            case ' ': case '\t': case '\f':
                L->i++;
                break;
            case '\r':
                return 0;
            default:
                if (header && colon >= 0) after_colon = 1;
                if (is_ident(c)) {
                    if (!skip_name_or_string(L)) return 0;
                } else {
                    L->i++;
                }
        }
    }
    if (L->failed || depth != 0) return 0;
    if (cutting) {
        if (body_statements == 0) return 0;
        open.body_end = n;
        if (!open.kept && !push(cuts, open)) return -1;
    }
    return 1;
}

static PyObject *cut_bodies(PyObject *module, PyObject *args) {
    Py_buffer source;
    PyObject *keep;
    if (!PyArg_ParseTuple(args, "y*O!:cut_bodies", &source, &PyTuple_Type, &keep)) return NULL;
    Lexer L = {(const unsigned char *)source.buf, source.len, 0, 1, 0};
    Cuts cuts = {NULL, 0, 0};
    PyObject *result = NULL, *skeleton = NULL, *list = NULL;
    int found = find_cuts(&L, keep, &cuts);
    if (found < 0) {
        PyErr_NoMemory();
        goto done;
    }
    if (found == 0) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    const unsigned char *s = L.s;
    Py_ssize_t size = source.len;
    for (Py_ssize_t k = 0; k < cuts.count; k++) {
        Cut *cut = &cuts.items[k];
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
    list = PyList_New(cuts.count);
    if (skeleton == NULL || list == NULL) goto done;
    char *out = PyBytes_AS_STRING(skeleton);
    Py_ssize_t from = 0;
    for (Py_ssize_t k = 0; k < cuts.count; k++) {
        Cut *cut = &cuts.items[k];
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
        PyList_SET_ITEM(list, k, item);
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

static PyMethodDef methods[] = {
    {"cut_bodies", cut_bodies, METH_VARARGS,
     "cut_bodies(source, keep) -> (skeleton, cuts) or None: see _bodies.c."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_bodies", "Function bodies cut out of Python source.", -1, methods,
};

PyMODINIT_FUNC PyInit__bodies(void) { return PyModule_Create(&module_def); }
