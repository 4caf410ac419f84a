/* json_split.c: the scanner between jansson's pieces, and the stand-ins. */
#define _GNU_SOURCE
#include "json_split.h"
#include "json_plain.h"

#include <stdlib.h>
#include <string.h>

/* A streamed member: its stand-in in the tree and where its text lies. */
typedef struct {
    split_rule_fn rule;
    const void *data;
} rule_t;

typedef struct {
    const json_t *standin;
    const char *open, *close; /* the opening and the closing bracket */
} streamed_t;

struct split_doc {
    json_t *root;
    streamed_t *streamed;
    size_t nstreamed, cap;
};

static const char *skip_space(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

/* The bytes the scanners below stop at, by bit: a reader skips megabytes
 * of site lists with them, a byte at a time. */
enum { STOP_IN_STRING = 1, STOP_OUTSIDE = 2 };
static const unsigned char stops[256] = {
    ['"'] = STOP_IN_STRING | STOP_OUTSIDE, ['\\'] = STOP_IN_STRING,
    ['['] = STOP_OUTSIDE, [']'] = STOP_OUTSIDE, ['{'] = STOP_OUTSIDE, ['}'] = STOP_OUTSIDE,
};

/* The end of the string starting at the quote p, past its closing quote;
 * NULL when the text ends first. Its content is checked by jansson. */
static const char *string_end(const char *p, const char *end)
{
    for (p++; p < end; p++) {
        while (p < end && !(stops[(unsigned char)*p] & STOP_IN_STRING))
            p++;
        if (p == end)
            break;
        if (*p == '\\')
            p++;
        else
            return p + 1;
    }
    return NULL;
}

/* The closing bracket of the array or object opening at p, brackets counted
 * outside strings; NULL when the text ends first, or when that bracket
 * does not close what p opens ("[{...}}": the walk that parses the pieces
 * checks what lies between, not the last bracket). Only a guess at the
 * extent otherwise: the walk checks the pieces. */
static const char *closing_bracket(const char *p, const char *end)
{
    const char closer = *p == '[' ? ']' : '}';
    int depth = 0;
    for (; p < end; p++) {
        while (p < end && !(stops[(unsigned char)*p] & STOP_OUTSIDE))
            p++;
        if (p == end)
            break;
        if (*p == '"') {
            p = string_end(p, end);
            if (p == NULL)
                return NULL;
            p--;
        } else if (*p == '[' || *p == '{') {
            depth++;
        } else if (--depth == 0) {
            return *p == closer ? p : NULL;
        }
    }
    return NULL;
}

/* The end of the value at p (before limit), found without parsing it;
 * NULL when it has none. */
static const char *value_end(const char *p, const char *limit)
{
    if (p >= limit)
        return NULL;
    if (*p == '[' || *p == '{') {
        const char *close = closing_bracket(p, limit);
        return close != NULL ? close + 1 : NULL;
    }
    if (*p == '"')
        return string_end(p, limit);
    while (p < limit && strchr(",]} \n\r\t", *p) == NULL)
        p++;
    return p;
}

/* Parses the value at *pp (before limit) and moves *pp past it; NULL when
 * it is not JSON. Plain JSON (json_plain.h) is read at once; otherwise
 * arrays and objects: jansson reads one and says where it stopped;
 * scalars: the text up to the next separator. */
static json_t *parse_value(const char **pp, const char *limit)
{
    const char *p = *pp;
    json_error_t err;
    if (p >= limit)
        return NULL;
    json_t *plain = plain_parse(pp, limit);
    if (plain != NULL)
        return plain;
    if (*p == '[' || *p == '{') {
        json_t *v = json_loadb(p, (size_t)(limit - p), JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES,
                               &err);
        if (v == NULL || err.position <= 0 || err.position > limit - p
            || (p[err.position - 1] != ']' && p[err.position - 1] != '}')) {
            json_decref(v);
            return NULL;
        }
        *pp = p + err.position;
        return v;
    }
    const char *q = value_end(p, limit);
    if (q == NULL)
        return NULL;
    json_t *v = json_loadb(p, (size_t)(q - p), JSON_DECODE_ANY, &err);
    if (v != NULL)
        *pp = q;
    return v;
}

/* Parses the key at *pp and the colon after it; NULL when they are not
 * there. */
static json_t *parse_key(const char **pp, const char *limit)
{
    const char *p = *pp;
    if (p >= limit || *p != '"')
        return NULL;
    json_t *key = parse_value(&p, limit);
    p = skip_space(p, limit);
    if (key == NULL || p >= limit || *p != ':') {
        json_decref(key);
        return NULL;
    }
    *pp = skip_space(p + 1, limit);
    return key;
}

/* A stand-in for the container opening at p, its text recorded; NULL when
 * its end cannot be found or out of memory. Moves *pp past it. */
static json_t *standin(split_doc_t *doc, const char **pp, const char *end)
{
    const char *open = *pp, *close = closing_bracket(open, end);
    if (close == NULL)
        return NULL;
    if (doc->nstreamed == doc->cap) {
        size_t cap = doc->cap ? doc->cap * 2 : 16;
        streamed_t *more = realloc(doc->streamed, cap * sizeof *more);
        if (more == NULL)
            return NULL;
        doc->streamed = more;
        doc->cap = cap;
    }
    json_t *v = *open == '[' ? json_array() : json_object();
    if (v == NULL)
        return NULL;
    doc->streamed[doc->nstreamed++] = (streamed_t){ v, open, close };
    *pp = close + 1;
    return v;
}

/* A member's value by its rule; *skipped set when the rule leaves it out.
 * NULL (and *skipped 0) when it is not JSON. */
static json_t *member_value(split_doc_t *doc, const char **pp, const char *end, const char *path,
                            int nested, const rule_t *rule, int *skipped);

/* Reads the object opening at *pp member by member; path is its key, or
 * NULL at the top. Returns the tree, or NULL when it is not JSON. */
static json_t *split_object(split_doc_t *doc, const char **pp, const char *end, const char *path,
                            const rule_t *rule)
{
    const char *p = *pp + 1;
    json_t *obj = json_object(), *seen = json_object();
    int ok = obj != NULL && seen != NULL;
    p = skip_space(p, end);
    if (ok && p < end && *p == '}') {
        *pp = p + 1;
        json_decref(seen);
        return obj;
    }
    while (ok) {
        json_t *key = parse_key(&p, end);
        const char *name = key ? json_string_value(key) : NULL;
        char *member = NULL;
        ok = name != NULL && json_object_get(seen, name) == NULL
             && json_object_set_new(seen, name, json_null()) == 0
             && (path == NULL ? (member = strdup(name)) != NULL
                              : asprintf(&member, "%s.%s", path, name) >= 0);
        int skipped = 0;
        json_t *v = ok ? member_value(doc, &p, end, member, path != NULL, rule, &skipped) : NULL;
        ok = ok && (skipped || (v != NULL && json_object_set_new(obj, name, v) == 0));
        free(member);
        json_decref(key);
        p = skip_space(p, end);
        if (!ok || p >= end || *p == '}')
            break;
        ok = *p == ',';
        p = skip_space(p + 1, end);
    }
    json_decref(seen);
    if (!ok || p >= end || *p != '}') {
        json_decref(obj);
        return NULL;
    }
    *pp = p + 1;
    return obj;
}

static json_t *member_value(split_doc_t *doc, const char **pp, const char *end, const char *path,
                            int nested, const rule_t *rule, int *skipped)
{
    split_rule_t r = rule->rule(path, rule->data);
    const char *p = *pp;
    *skipped = 0;
    if (r == SPLIT_SKIP || r == SPLIT_EMPTY) {
        /* Not read: only its extent is found, as a reader that never
         * looks at a member would. */
        const char *stop = p < end && (*p == '[' || *p == '{') ? closing_bracket(p, end) : NULL;
        if (stop != NULL) {
            *pp = stop + 1;
        } else {
            json_t *v = parse_value(pp, end);
            if (v == NULL)
                return NULL;
            json_decref(v);
        }
        *skipped = r == SPLIT_SKIP;
        return r == SPLIT_EMPTY ? json_array() : NULL;
    }
    if (r == SPLIT_MEMBERS && !nested && p < end && *p == '{')
        return split_object(doc, pp, end, path, rule);
    if (r != SPLIT_PARSE && p < end && (*p == '[' || *p == '{'))
        return standin(doc, pp, end);
    return parse_value(pp, end);
}

split_doc_t *split_open(const char *text, size_t len, split_rule_fn fn, const void *data)
{
    const rule_t rule = { fn, data };
    const char *end = text + len, *p = skip_space(text, end);
    if (p >= end || *p != '{')
        return NULL;
    split_doc_t *doc = calloc(1, sizeof *doc);
    if (doc == NULL)
        return NULL;
    doc->root = split_object(doc, &p, end, NULL, &rule);
    if (doc->root == NULL || skip_space(p, end) != end) {
        split_close(doc);
        return NULL;
    }
    return doc;
}

json_t *split_root(const split_doc_t *doc)
{
    return doc->root;
}

/* The record of a stand-in, or NULL. */
static const streamed_t *find(const split_doc_t *doc, const json_t *v)
{
    for (size_t i = 0; doc != NULL && v != NULL && i < doc->nstreamed; i++)
        if (doc->streamed[i].standin == v)
            return &doc->streamed[i];
    return NULL;
}

int split_is_streamed(const split_doc_t *doc, const json_t *v)
{
    return find(doc, v) != NULL;
}

int split_text(const split_doc_t *doc, const json_t *v, const char **start, const char **end)
{
    const streamed_t *s = find(doc, v);
    if (s == NULL)
        return 0;
    *start = s->open;
    *end = s->close + 1;
    return 1;
}

void split_close(split_doc_t *doc)
{
    if (doc == NULL)
        return;
    json_decref(doc->root);
    free(doc->streamed);
    free(doc);
}

void split_iter_begin(split_iter_t *it, const split_doc_t *doc, json_t *container)
{
    memset(it, 0, sizeof *it);
    const streamed_t *s = find(doc, container);
    if (s != NULL) {
        it->p = s->open + 1;
        it->close = s->close;
        it->object = *s->open == '{';
        return;
    }
    it->tree = container;
    it->object = json_is_object(container);
    it->member = it->object ? json_object_iter(container) : NULL;
}

/* The next piece of a streamed container: its separator checked, its key
 * (objects) parsed, and its value parsed (parse) or only its extent found.
 * 1 with the value's text at it->piece..it->p; 0 at the end, or when the
 * text is not JSON (it->failed). */
static int next_piece(split_iter_t *it, int parse)
{
    const char *p = skip_space(it->p, it->close);
    if (it->started) {
        if (p == it->close)
            return 0;
        if (*p != ',')
            goto bad;
        p = skip_space(p + 1, it->close);
    } else if (p == it->close) {
        it->started = 1;
        return 0;
    }
    it->started = 1;
    if (it->object && (it->key = parse_key(&p, it->close)) == NULL)
        goto bad;
    it->piece = p;
    if (parse ? (it->value = parse_value(&p, it->close)) == NULL
              : (p = value_end(p, it->close)) == NULL || p == it->piece)
        goto bad;
    it->p = p;
    return 1;
bad:
    it->failed = 1;
    it->p = it->close;
    return 0;
}

/* Frees the piece handed out last. */
static void drop_piece(split_iter_t *it)
{
    json_decref(it->value);
    json_decref(it->key);
    it->value = it->key = NULL;
}

int split_iter_next_text(split_iter_t *it, const char **start, const char **end)
{
    drop_piece(it);
    if (it->failed || it->tree != NULL || it->close == NULL || !next_piece(it, 0))
        return 0;
    *start = it->piece;
    *end = it->p;
    return 1;
}

json_t *split_iter_next(split_iter_t *it)
{
    drop_piece(it);
    if (it->failed)
        return NULL;
    if (it->tree == NULL)
        return it->close != NULL && next_piece(it, 1) ? it->value : NULL;
    if (!it->object)
        return json_array_get(it->tree, it->index++);
    if (it->started)
        it->member = json_object_iter_next(it->tree, it->member);
    it->started = 1;
    return it->member != NULL ? json_object_iter_value(it->member) : NULL;
}

const char *split_iter_key(const split_iter_t *it)
{
    if (it->tree != NULL)
        return it->member != NULL ? json_object_iter_key(it->member) : NULL;
    return it->key != NULL ? json_string_value(it->key) : NULL;
}

int split_iter_text(const split_iter_t *it, const char **start, const char **end)
{
    if (it->tree != NULL || it->value == NULL)
        return 0;
    *start = it->piece;
    *end = it->p;
    return 1;
}

int split_iter_failed(const split_iter_t *it)
{
    return it->failed;
}

void split_iter_end(split_iter_t *it)
{
    drop_piece(it);
}
