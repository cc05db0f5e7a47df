/* The Python lexing shared by the audit's C passes: logical lines, strings
 * with their prefixes, f- and t-string fields as in PEP 701, comments,
 * brackets and continuation lines. */

#ifndef VLLM_SP_BASE_LEX_H
#define VLLM_SP_BASE_LEX_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    const unsigned char *s;
    Py_ssize_t n;   /* lexing stops here: the end of the source or of a range */
    Py_ssize_t i;
    long line;      /* the line L->i is on */
    int failed;
    int non_ascii;  /* a byte past 0x7f outside strings and comments: an identifier Python folds by NFKC */
} Lexer;

/* One logical line: from its first token to the newline that ends it. */
typedef struct {
    Py_ssize_t physical;  /* where its first physical line starts (its indentation) */
    Py_ssize_t start, end; /* its first token; the newline closing it (or the end) */
    Py_ssize_t last;       /* its last significant character */
    long indent;           /* its indentation, tabs to multiples of 8 */
    long line;             /* the line of its first token */
    int block;             /* it ends with a colon outside brackets: a block header */
} Line;

extern unsigned char LEX_IDENT[256];
#define lex_is_ident(c) (LEX_IDENT[(unsigned char)(c)])

/* Fills the tables; once, before anything else here. */
void lex_init(void);

/* The next logical line from L->i: 1, 0 at the end, -1 where the source does
 * not lex (an unterminated string, unbalanced brackets, a carriage return). */
int lex_next_line(Lexer *L, Line *line);
/* A string whose opening quote is at L->i; after it, L->i is past the closing quote. */
int lex_skip_string(Lexer *L, int templated, int raw);
/* A name at L->i; a string too when the name is its prefix. */
int lex_skip_name_or_string(Lexer *L);
/* `word` at `at`, followed by a blank or a continuation. */
int lex_word_at(const unsigned char *s, Py_ssize_t n, Py_ssize_t at, const char *word);
/* Past blanks and backslash continuations. */
Py_ssize_t lex_skip_blanks(const unsigned char *s, Py_ssize_t n, Py_ssize_t at);
/* The `def` or `async def` at the start of a logical line: the offset of its name, or -1. */
Py_ssize_t lex_def_name_at(const unsigned char *s, Py_ssize_t n, Py_ssize_t at);

/* Within a logical line's bytes [at, end): */
/* past blanks, comments, continuations and (inside brackets) line breaks; */
Py_ssize_t lex_skip_space(const unsigned char *s, Py_ssize_t at, Py_ssize_t end);
/* the end of the name at `at` (`at` itself if none starts there); */
static inline Py_ssize_t lex_name_end(const unsigned char *s, Py_ssize_t at, Py_ssize_t end) {
    if (at < end && lex_is_ident(s[at]) && !(s[at] >= '0' && s[at] <= '9'))
        while (at < end && lex_is_ident(s[at])) at++;
    return at;
}
/* whether [at, end) is `word`; */
static inline int lex_is_name(const unsigned char *s, Py_ssize_t at, Py_ssize_t end, const char *word) {
    Py_ssize_t k = 0;
    for (; at + k < end; k++)
        if (word[k] == '\0' || s[at + k] != (unsigned char)word[k]) return 0;
    return word[k] == '\0';
}
/* the first of `stops` outside brackets and strings (or `end`); */
Py_ssize_t lex_skip_to(const unsigned char *s, Py_ssize_t at, Py_ssize_t end, const char *stops);
/* the dotted name at `at`: its end, its last part, how many parts. */
Py_ssize_t lex_dotted_at(const unsigned char *s, Py_ssize_t at, Py_ssize_t end,
                         Py_ssize_t *last, Py_ssize_t *last_end, int *parts);

/* The code digest (see digest.c), folded one logical line at a time: by
 * code_digest's own pass, and by scan_find's, which lexes the same lines. */
typedef struct {
    uint64_t a, b; /* two FNV-1a streams from different bases: 128 bits */
    int complete;  /* every logical line to the end is folded in: code_digest's answer */
} CodeDigest;

#define LEX_FNV_PRIME 1099511628211ULL

static inline void code_digest_start(CodeDigest *d) {
    d->a = 14695981039346656037ULL;
    d->b = 0x6c62272e07bb0142ULL;
    d->complete = 0;
}

static inline uint64_t lex_fnv(uint64_t h, const unsigned char *p, Py_ssize_t n) {
    for (Py_ssize_t k = 0; k < n; k++) {
        h ^= p[k];
        h *= LEX_FNV_PRIME;
    }
    return h;
}

/* The statement's line number, then its bytes from the line's start (its
 * indentation) to its last significant character. */
static inline void code_digest_line(CodeDigest *d, const unsigned char *s, const Line *line) {
    unsigned char number[sizeof(long)];
    memcpy(number, &line->line, sizeof(long));
    d->a = lex_fnv(d->a, number, (Py_ssize_t)sizeof(long));
    d->b = lex_fnv(d->b, number, (Py_ssize_t)sizeof(long));
    d->a = lex_fnv(d->a, s + line->physical, line->last + 1 - line->physical);
    d->b = lex_fnv(d->b ^ 0xff, s + line->physical, line->last + 1 - line->physical);
}

static inline PyObject *code_digest_bytes(const CodeDigest *d) {
    unsigned char out[16];
    memcpy(out, &d->a, 8);
    memcpy(out + 8, &d->b, 8);
    return PyBytes_FromStringAndSize((const char *)out, 16);
}

PyObject *cut_bodies(PyObject *module, PyObject *args);
PyObject *scan(PyObject *module, PyObject *args);
PyObject *read_and_scan(PyObject *module, PyObject *args);
PyObject *code_digest(PyObject *module, PyObject *args);
PyObject *spells_any(PyObject *module, PyObject *args);

#endif
