/* What each `__init__` of a class shows the pre-scan: whether it surely runs
 * its parent's, and whether it may set an attribute (see scan.c's header). */

#include "scan.h"

#include <string.h>

/* Whether the dotted names [a, a_end) and [b, b_end) are the same, blanks aside. */
static int same_dotted(const unsigned char *s, Py_ssize_t a, Py_ssize_t a_end, Py_ssize_t b, Py_ssize_t b_end) {
    for (;;) {
        a = lex_skip_space(s, a, a_end);
        b = lex_skip_space(s, b, b_end);
        if (a >= a_end || b >= b_end) return a >= a_end && b >= b_end;
        if (s[a++] != s[b++]) return 0;
    }
}

/* Whether [at, end) holds the bytes `what`. */
static int contains(const unsigned char *s, Py_ssize_t at, Py_ssize_t end, const unsigned char *what,
                    Py_ssize_t length) {
    for (Py_ssize_t k = at; k + length <= end; k++)
        if (memcmp(s + k, what, (size_t)length) == 0) return 1;
    return 0;
}

/* Builtins called with the instance that set nothing on it (the summaries'
 * `_BUILTINS_TAKING_SELF`, `summaries/_visitor.py`). */
static const char *const BUILTINS_TAKING_SELF[] = {
    "isinstance", "id", "type", "repr", "str", "print", "vars", "dir", "super", "len", "hash", "iter",
    "callable", "format", "bool", "issubclass", "object", NULL,
};

static int builtin_taking_self(const unsigned char *s, Py_ssize_t start, Py_ssize_t stop) {
    for (const char *const *name = BUILTINS_TAKING_SELF; *name; name++)
        if (lex_is_name(s, start, stop, *name)) return 1;
    return 0;
}

/* Whether the init body [at, end) may set an attribute: it touches
 * `self.<name>`, runs a method on self by its class (`Base._setup(self)`),
 * hands `self` first to a function (`setup(self)`, which the summaries
 * follow into a module-level function), calls a `super()` method other than
 * `__init__` (`super()._setup()`), or names setattr, `__setattr__`, vars or
 * fastcore's store_attr (`object.__setattr__(self, "a", v)`,
 * `vars(self).update(...)`, `store_attr()` name no `self.`): each way the
 * summaries see a set. */
static int touches_self(const unsigned char *s, Py_ssize_t at, Py_ssize_t end,
                        Py_ssize_t self_start, Py_ssize_t self_end) {
    Lexer L = {s, end, at, 0, 0};
    Py_ssize_t length = self_end - self_start;
    while (L.i < end) {
        unsigned char c = s[L.i];
        if (c == '"' || c == '\'') {
            if (!lex_skip_string(&L, 0, 0)) return 1;
        } else if (c == '#') {
            while (L.i < end && s[L.i] != '\n') L.i++;
        } else if (lex_is_ident(c)) {
            Py_ssize_t start = L.i;
            Py_ssize_t stop = start;
            while (stop < end && lex_is_ident(s[stop])) stop++;
            int is_self = stop - start == length && memcmp(s + start, s + self_start, (size_t)length) == 0;
            Py_ssize_t next = lex_skip_space(s, stop, end);
            int dotted = next < end && s[next] == '.';
            if ((is_self && dotted) || lex_is_name(s, start, stop, "setattr") ||
                lex_is_name(s, start, stop, "__setattr__") || lex_is_name(s, start, stop, "vars") ||
                lex_is_name(s, start, stop, "store_attr"))
                return 1;
            if (lex_is_name(s, start, stop, "self") && next + 1 < end && s[next] == '=' && s[next + 1] != '=')
                return 1; /* `Base.method(x, self=self)` */
            if (lex_is_name(s, start, stop, "super")) { /* only `super(...).__init__(` sets nothing itself */
                Py_ssize_t open = lex_skip_space(s, stop, end);
                if (open >= end || s[open] != '(') return 1;
                Py_ssize_t close = lex_skip_to(s, open + 1, end, ")");
                Py_ssize_t dot = lex_skip_space(s, close + 1, end);
                if (close >= end || dot >= end || s[dot] != '.') return 1;
                Py_ssize_t name = lex_skip_space(s, dot + 1, end), name_end = lex_name_end(s, name, end);
                if (!lex_is_name(s, name, name_end, "__init__")) return 1;
                L.i = name_end;
                continue;
            }
            if (!is_self && !dotted && next < end && s[next] == '(' && !builtin_taking_self(s, start, stop)) {
                /* `setup(self, ...)`: a function run on the instance */
                Py_ssize_t arg = lex_skip_space(s, next + 1, end), arg_end = lex_name_end(s, arg, end);
                Py_ssize_t after = lex_skip_space(s, arg_end, end);
                if (arg_end - arg == length && memcmp(s + arg, s + self_start, (size_t)length) == 0 &&
                    after < end && (s[after] == ',' || s[after] == ')'))
                    return 1;
            }
            if (!is_self && dotted) {
                /* `B._setup(self, ...)` runs B's method on self (the summaries follow it);
                 * `Base.__init__(self` is the parent's __init__, counted by its bases. */
                Py_ssize_t last = 0, last_end = 0;
                int parts = 0;
                Py_ssize_t open = lex_skip_space(s, lex_dotted_at(s, start, end, &last, &last_end, &parts), end);
                Py_ssize_t arg = open < end && s[open] == '(' ? lex_skip_space(s, open + 1, end) : end;
                Py_ssize_t arg_end = lex_name_end(s, arg, end);
                if (parts >= 2 && arg_end - arg == length && memcmp(s + arg, s + self_start, (size_t)length) == 0) {
                    if (!lex_is_name(s, last, last_end, "__init__")) return 1;
                    L.i = arg_end;
                    continue;
                }
            }
            if (!lex_skip_name_or_string(&L)) return 1;
            if (L.i > stop && contains(s, stop, L.i, s + self_start, length))
                return 1; /* an f-string whose fields may name self: read as code would be */
        } else {
            L.i++;
        }
    }
    return 0;
}

/* Whether the call whose `(` is at `open` is the whole statement (nothing
 * after it but `;`): `super().__init__() if flag else ...` chains on one branch. */
static int whole_statement(const unsigned char *s, Py_ssize_t open, Py_ssize_t end) {
    Py_ssize_t close = lex_skip_to(s, open + 1, end, ")");
    if (close >= end) return 0;
    Py_ssize_t after = lex_skip_space(s, close + 1, end);
    return after >= end || s[after] == ';';
}

/* Whether the statement at `at` runs the parent's __init__ (see the header):
 * 1 by super(), 2 by naming the base, 0 not. */
static int chains(const unsigned char *s, Py_ssize_t at, Py_ssize_t end, const Class *cls,
                  Py_ssize_t self_start, Py_ssize_t self_end) {
    Py_ssize_t last = 0, last_end = 0, before_end = -1;
    int parts = 0;
    Py_ssize_t stop = lex_name_end(s, at, end);
    if (lex_is_name(s, at, stop, "super")) {
        Py_ssize_t p = lex_skip_space(s, stop, end);
        if (p >= end || s[p] != '(') return 0;
        Py_ssize_t first = lex_skip_space(s, p + 1, end);
        Py_ssize_t close = lex_skip_to(s, p + 1, end, ")");
        if (close >= end) return 0;
        int ok = first == close; /* super() */
        if (!ok) {
            Py_ssize_t comma = lex_skip_to(s, first, end, ",)");
            Py_ssize_t first_end = lex_name_end(s, first, end);
            Py_ssize_t second = comma < close ? lex_skip_space(s, comma + 1, end) : close;
            Py_ssize_t more = comma < close ? lex_skip_to(s, second, end, ",)") : close;
            ok = comma < close && more == close && second < close &&
                 lex_skip_space(s, first_end, end) == comma &&
                 first_end - first == cls->name_end - cls->name_start &&
                 memcmp(s + first, s + cls->name_start, (size_t)(first_end - first)) == 0;
        }
        Py_ssize_t dot = lex_skip_space(s, close + 1, end);
        if (!ok || dot >= end || s[dot] != '.') return 0;
        Py_ssize_t init = lex_skip_space(s, dot + 1, end), init_end = lex_name_end(s, init, end);
        Py_ssize_t call = lex_skip_space(s, init_end, end);
        return lex_is_name(s, init, init_end, "__init__") && call < end && s[call] == '(' &&
               whole_statement(s, call, end);
    }
    /* Base.__init__(self: walk the dotted name, remembering the part before __init__ */
    Py_ssize_t p = at;
    for (;;) {
        Py_ssize_t part_end = lex_name_end(s, p, end);
        if (part_end == p) return 0;
        before_end = last_end;
        last = p;
        last_end = part_end;
        parts++;
        Py_ssize_t dot = lex_skip_space(s, part_end, end);
        if (dot >= end || s[dot] != '.') {
            p = dot;
            break;
        }
        p = lex_skip_space(s, dot + 1, end);
    }
    if (parts < 2 || !lex_is_name(s, last, last_end, "__init__") || p >= end || s[p] != '(' ||
        !whole_statement(s, p, end))
        return 0;
    Py_ssize_t arg = lex_skip_space(s, p + 1, end), arg_end = lex_name_end(s, arg, end);
    if (arg_end - arg != self_end - self_start || memcmp(s + arg, s + self_start, (size_t)(arg_end - arg)) != 0)
        return 0;
    /* `nn.Module.__init__(self)` runs the base only where the header writes that
     * base `nn.Module`: a class `Module` of the project is another class. */
    return cls->only_base >= 0 && same_dotted(s, at, before_end, cls->only_base, cls->only_base_end) ? 2 : 0;
}

void finish_init(Init *init, Found *found) {
    if (init->class_index < 0) return;
    Class *cls = &found->classes[init->class_index];
    cls->init_chains = cls->has_init ? (cls->init_chains && init->chains) : init->chains != 0;
    cls->init_explicit |= init->chains == 2;
    cls->init_sets |= init->sets;
    cls->has_init = 1;
    init->class_index = -1;
}

void start_init(const unsigned char *s, const Line *line, Py_ssize_t name_stop,
                       Py_ssize_t index, Found *found, Init *init) {
    init->class_index = index;
    init->def_indent = line->indent;
    init->body_indent = -1;
    init->chains = 0;
    init->ended = 0;
    init->sets = 1; /* until its first parameter is known */
    init->self_start = init->self_end = 0;
    Py_ssize_t open = lex_skip_space(s, name_stop, line->end);
    if (open >= line->end || s[open] != '(') return;
    Py_ssize_t self = lex_skip_space(s, open + 1, line->end), self_end = lex_name_end(s, self, line->end);
    if (self_end == self) return;
    init->self_start = self;
    init->self_end = self_end;
    init->sets = 0;
    if (line->block) return;
    Py_ssize_t close = lex_skip_to(s, open + 1, line->end, ")");
    Py_ssize_t colon = lex_skip_to(s, close + 1, line->end, ":");
    if (colon >= line->end) return;
    Py_ssize_t body = lex_skip_space(s, colon + 1, line->end);
    init->chains = chains(s, body, line->end, &found->classes[index], self, self_end);
    init->sets = touches_self(s, body, line->end, self, self_end);
    finish_init(init, found);
}

void read_init_line(const unsigned char *s, const Line *line, Found *found, Init *init) {
    if (init->body_indent < 0) init->body_indent = line->indent;
    if (line->indent >= init->body_indent && !init->chains && !init->ended) {
        Py_ssize_t word_end = lex_name_end(s, line->start, line->end);
        /* A `return`, even nested (`if True: return`), may end the body before
         * a later chain: the class stays a candidate. (A nested `raise` builds
         * no instance.) */
        if (lex_is_name(s, line->start, word_end, "return") ||
            (line->indent == init->body_indent && lex_is_name(s, line->start, word_end, "raise")))
            init->ended = 1;
        else if (line->indent == init->body_indent)
            init->chains = chains(s, line->start, line->end, &found->classes[init->class_index],
                                  init->self_start, init->self_end);
    }
    if (!init->sets)
        init->sets = touches_self(s, line->start, line->end, init->self_start, init->self_end);
}
