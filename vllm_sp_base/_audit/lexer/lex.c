/* Lexing shared by bodies.c and scan.c: see lex.h. */

#include "lex.h"

#include <string.h>

static int skip_field(Lexer *L);

unsigned char LEX_IDENT[256];
/* What lex_next_line must look at; every other byte only ends the line's last token. */
static unsigned char SPECIAL[256];
/* Where a string's body stops being plain text. */
static unsigned char STRING_STOP[256];

enum { PLAIN = 0, BLANK, NEWLINE, BACKSLASH, HASH, QUOTE, OPEN, CLOSE, COLON, RETURN, WIDE };

void lex_init(void) {
    for (int c = 0; c < 256; c++)
        LEX_IDENT[c] = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                       (c >= '0' && c <= '9') || c >= 0x80;
    SPECIAL[' '] = SPECIAL['\t'] = SPECIAL['\f'] = BLANK;
    SPECIAL['\n'] = NEWLINE;
    SPECIAL['\\'] = BACKSLASH;
    SPECIAL['#'] = HASH;
    SPECIAL['"'] = SPECIAL['\''] = QUOTE;
    SPECIAL['('] = SPECIAL['['] = SPECIAL['{'] = OPEN;
    SPECIAL[')'] = SPECIAL[']'] = SPECIAL['}'] = CLOSE;
    SPECIAL[':'] = COLON;
    SPECIAL['\r'] = RETURN;
    for (int c = 0x80; c < 256; c++) SPECIAL[c] = WIDE;
    STRING_STOP['\\'] = STRING_STOP['\n'] = STRING_STOP['"'] = STRING_STOP['\''] = 1;
    STRING_STOP['{'] = 1;
}

/* The prefix of the string whose quote is at `quote`: 1 | 2 if templated
 * (f, t) | 4 if raw. */
static int prefix_before(const unsigned char *s, Py_ssize_t from, Py_ssize_t quote) {
    Py_ssize_t start = quote;
    while (start > from && lex_is_ident(s[start - 1]) && quote - start <= 2) start--;
    if (start == quote || quote - start > 2 || (start > from && lex_is_ident(s[start - 1])))
        return 1; /* no name, or one that is no prefix (`if"a"`): a plain string */
    int flags = 1;
    for (Py_ssize_t k = start; k < quote; k++) {
        switch (s[k]) {
            case 'f': case 'F': case 't': case 'T': flags |= 2; break;
            case 'r': case 'R': flags |= 4; break;
            case 'b': case 'B': case 'u': case 'U': break;
            default: return 1;
        }
    }
    return flags;
}

int lex_next_line(Lexer *L, Line *line) {
    const unsigned char *s = L->s;
    Py_ssize_t n = L->n, i = L->i;
    long number = L->line;
    for (;;) { /* blank and comment-only lines start no statement */
        Py_ssize_t j = i;
        while (j < n && s[j] == ' ') j++; /* indentation is mostly spaces: a quarter of the bytes */
        long column = (long)(j - i);
        while (j < n && SPECIAL[s[j]] == BLANK) {
            column = s[j] == '\t' ? (column / 8 + 1) * 8 : (s[j] == '\f' ? 0 : column + 1);
            j++;
        }
        if (j >= n) {
            L->i = j;
            L->line = number;
            return 0;
        }
        if (s[j] == '\n' || s[j] == '#' || (s[j] == '\r' && j + 1 < n && s[j + 1] == '\n')) {
            const unsigned char *newline = memchr(s + j, '\n', (size_t)(n - j));
            if (newline == NULL) {
                L->i = n;
                L->line = number;
                return 0;
            }
            i = newline - s + 1;
            number++;
            continue;
        }
        line->physical = i;
        line->start = j;
        line->indent = column;
        line->line = number;
        i = j;
        break;
    }
    int depth = 0, colon_outside = 0;
    Py_ssize_t last = i;
    while (i < n) {
        unsigned char c = s[i];
        switch (SPECIAL[c]) {
            case PLAIN:
            case BLANK: { /* most of a line: names, numbers, operators, spaces */
                /* One loop for both, `last` by a conditional move: a branch at
                 * every token's edge would be mispredicted at every other one. */
                Py_ssize_t j = i;
                unsigned char kind;
                while (j < n && (kind = SPECIAL[s[j]]) <= BLANK) {
                    last = kind == PLAIN ? j : last;
                    j++;
                }
                i = j;
                continue;
            }
            case NEWLINE:
                if (depth == 0) goto done;
                number++;
                i++;
                continue;
            case BACKSLASH: /* a continuation, before \n or \r\n */
                if (i + 1 < n && s[i + 1] == '\n') {
                    i += 2;
                } else if (i + 2 < n && s[i + 1] == '\r' && s[i + 2] == '\n') {
                    i += 3;
                } else {
                    return -1;
                }
                number++;
                continue;
            case HASH: {
                const unsigned char *newline = memchr(s + i, '\n', (size_t)(n - i));
                i = newline ? newline - s : n;
                continue;
            }
            case QUOTE: {
                int flags = prefix_before(s, line->start, i);
                L->i = i;
                L->line = number;
                if (!lex_skip_string(L, flags & 2, flags & 4)) return -1;
                i = L->i;
                number = L->line;
                last = i - 1;
                continue;
            }
            case OPEN:
                depth++;
                last = i++;
                continue;
            case CLOSE:
                if (--depth < 0) return -1;
                last = i++;
                continue;
            case COLON:
                colon_outside = depth == 0;
                last = i++;
                continue;
            case WIDE: /* part of a name (only strings and comments may hold other text) */
                L->non_ascii = 1;
                last = i++;
                continue;
            default: /* RETURN: only as half of a Windows line end */
                if (i + 1 >= n || s[i + 1] != '\n') return -1;
                i++;
                continue;
        }
    }
done:
    if (depth != 0) return -1;
    line->end = i;
    line->last = last;
    line->block = s[last] == ':' && colon_outside;
    if (i < n) {
        i++;
        number++;
    }
    L->i = i;
    L->line = number;
    return 1;
}

/* A string whose opening quote is at L->i. `templated`: f- or t-string;
 * `raw`: r-prefixed. Leaves L->i after the closing quote. */
int lex_skip_string(Lexer *L, int templated, int raw) {
    const unsigned char *s = L->s;
    Py_ssize_t n = L->n, i = L->i;
    unsigned char quote = s[i];
    int triple = i + 2 < n && s[i + 1] == quote && s[i + 2] == quote;
    i += triple ? 3 : 1;
    while (i < n) {
        while (i < n && !STRING_STOP[s[i]]) i++;
        if (i >= n) break;
        unsigned char c = s[i];
        if (c == '\\') {
            if (i + 1 >= n) break;
            unsigned char next = s[i + 1];
            if (templated && (next == '{' || next == '}')) {
                i += 1; /* a backslash does not escape a field's brace */
                continue;
            }
            if (templated && !raw && next == 'N' && i + 2 < n && s[i + 2] == '{') {
                /* \N{NAME}: braces of a named escape, not a field */
                Py_ssize_t close = i + 3;
                while (close < n && s[close] != '}' && s[close] != quote && s[close] != '\n')
                    close++;
                if (close >= n || s[close] != '}') break;
                i = close + 1;
                continue;
            }
            if (next == '\r' && i + 2 < n && s[i + 2] == '\n') {
                i += 1; /* the escaped line break is \r\n */
                next = '\n';
            }
            if (next == '\n') L->line++;
            i += 2;
            continue;
        }
        if (c == '\n') {
            if (!triple) break;
            L->line++;
            i++;
            continue;
        }
        if (c == quote) {
            if (!triple) {
                L->i = i + 1;
                return 1;
            }
            if (i + 2 < n && s[i + 1] == quote && s[i + 2] == quote) {
                L->i = i + 3;
                return 1;
            }
            i++;
            continue;
        }
        if (templated && c == '{') {
            if (i + 1 < n && s[i + 1] == '{') {
                i += 2;
                continue;
            }
            L->i = i + 1;
            if (!skip_field(L)) return 0;
            i = L->i;
            continue;
        }
        i++;
    }
    L->i = i;
    L->failed = 1;
    return 0;
}

/* An identifier at L->i; if it is a string prefix directly followed by a
 * quote, the string too. */
int lex_skip_name_or_string(Lexer *L) {
    const unsigned char *s = L->s;
    Py_ssize_t start = L->i;
    while (L->i < L->n && lex_is_ident(s[L->i])) L->i++;
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
        if (prefix) return lex_skip_string(L, templated, raw);
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
            if (!lex_skip_string(L, 0, 0)) return 0;
        } else if (lex_is_ident(c)) {
            if (!lex_skip_name_or_string(L)) return 0;
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

int lex_word_at(const unsigned char *s, Py_ssize_t n, Py_ssize_t at, const char *word) {
    size_t length = 0;
    while (word[length] != '\0') { /* short words: compared as they are read */
        if (at + (Py_ssize_t)length >= n || s[at + length] != (unsigned char)word[length]) return 0;
        length++;
    }
    if (at + (Py_ssize_t)length >= n) return 0;
    unsigned char after = s[at + length];
    return after == ' ' || after == '\t' || after == '\f' || after == '\\';
}

Py_ssize_t lex_skip_blanks(const unsigned char *s, Py_ssize_t n, Py_ssize_t at) {
    for (;;) {
        while (at < n && (s[at] == ' ' || s[at] == '\t' || s[at] == '\f')) at++;
        if (at + 1 < n && s[at] == '\\' && s[at + 1] == '\n') {
            at += 2;
            continue;
        }
        if (at + 2 < n && s[at] == '\\' && s[at + 1] == '\r' && s[at + 2] == '\n') {
            at += 3;
            continue;
        }
        return at;
    }
}

/* The `def` (or `async def`) at the start of a logical line: the offset of
 * its name, or -1. */
Py_ssize_t lex_def_name_at(const unsigned char *s, Py_ssize_t n, Py_ssize_t at) {
    if (lex_word_at(s, n, at, "async")) at = lex_skip_blanks(s, n, at + 5);
    if (!lex_word_at(s, n, at, "def")) return -1;
    return lex_skip_blanks(s, n, at + 3);
}

/* Past blanks, comments, continuations and (inside brackets) newlines, up to `end`. */
Py_ssize_t lex_skip_space(const unsigned char *s, Py_ssize_t at, Py_ssize_t end) {
    while (at < end) {
        unsigned char c = s[at];
        if (c == ' ' || c == '\t' || c == '\f' || c == '\n' || c == '\\' || c == '\r') {
            at++;
        } else if (c == '#') {
            while (at < end && s[at] != '\n') at++;
        } else {
            break;
        }
    }
    return at;
}


/* Whether [at, end) is `word`. */

/* From `at` to the next ',' or closing bracket outside brackets (or `stop`),
 * with strings skipped. */
Py_ssize_t lex_skip_to(const unsigned char *s, Py_ssize_t at, Py_ssize_t end, const char *stops) {
    Lexer L = {s, end, at, 0, 0};
    int depth = 0;
    while (L.i < end) {
        unsigned char c = s[L.i];
        if (depth == 0 && strchr(stops, c) != NULL && c != '\0') return L.i;
        if (c == '"' || c == '\'') {
            if (!lex_skip_string(&L, 0, 0)) return end;
        } else if (lex_is_ident(c)) {
            if (!lex_skip_name_or_string(&L)) return end;
        } else if (c == '#') {
            while (L.i < end && s[L.i] != '\n') L.i++;
        } else {
            if (c == '(' || c == '[' || c == '{') depth++;
            if (c == ')' || c == ']' || c == '}') depth--;
            L.i++;
        }
    }
    return end;
}

/* A dotted name at `at`: its end, its last part [*last, *last_end), how many parts. */
Py_ssize_t lex_dotted_at(const unsigned char *s, Py_ssize_t at, Py_ssize_t end,
                            Py_ssize_t *last, Py_ssize_t *last_end, int *parts) {
    *parts = 0;
    Py_ssize_t stop = lex_name_end(s, at, end);
    if (stop == at) return at;
    *last = at;
    *last_end = stop;
    *parts = 1;
    for (;;) {
        Py_ssize_t dot = lex_skip_space(s, stop, end);
        if (dot >= end || s[dot] != '.') return stop;
        Py_ssize_t next = lex_skip_space(s, dot + 1, end);
        Py_ssize_t next_end = lex_name_end(s, next, end);
        if (next_end == next) return stop;
        *last = next;
        *last_end = next_end;
        (*parts)++;
        stop = next_end;
    }
}
