/* frame_text.h: a stack frame and a site's origin, written the one way
 * every view writes them (the shim's exit summary, gpuleak report, check,
 * diff), LeakSanitizer's shape for frames. */
#ifndef GPULEAK_FRAME_TEXT_H
#define GPULEAK_FRAME_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Writes text with control bytes as '?' (NULL as "??"): names come from
 * files and from reports, neither of which may move a terminal's cursor or
 * split one line into two. */
void frame_text_put(FILE *f, const char *text);

/* The command's one line for an input it cannot use: "gpuleak: MESSAGE"
 * on stderr, the message written by frame_text_put ("out of memory" when
 * NULL, as a failed allocation leaves no message). */
void frame_text_error_line(const char *message);

/* The last component of path ("?" for NULL): modules and files are shown
 * by basename, as LeakSanitizer shows them. */
const char *frame_text_basename(const char *path);

/* "    #3 0x7f12 in step train.c:42 (train+0x1234)"; function NULL is "??". */
void frame_text_native(FILE *f, int index, uint64_t address, const char *function,
                       const char *file, long line, const char *module, uint64_t offset);

/* "    #0 forward in model.py:17 (Python)". */
void frame_text_python(FILE *f, int index, const char *function, const char *file, long line);

/* The line under a CUDA runtime call that says how many of cudart's own
 * frames were folded under it (origin_cudart_folded); where says where
 * they are shown whole ("--full-stacks shows them", "the report has
 * them"). */
void frame_text_cudart_folded(FILE *f, size_t folded, const char *where);

/* A frame shown after an origin: a caller of the user's, or the installed
 * package it went through. */
typedef struct frame_text_place {
    const char *function, *file;
    long line;
} frame_text_place_t;

/* A site's origin as the report has it (docs/origin-rules.md). */
typedef struct frame_text_origin {
    int found;                         /* 0: every frame was plumbing */
    const char *function, *file, *module;
    long line;                         /* 0 when unknown */
    uint64_t offset;                   /* for a native frame without a file */
    const frame_text_place_t *callers; /* a helper's path, innermost first */
    size_t ncallers;
    const frame_text_place_t *via;     /* NULL: none */
    int library;                       /* no frame of the program's own */
    const char *owner;                 /* NULL when unknown; "user" is not printed */
    int unseen;                        /* 1 + the framework (report_format.h) whose
                                          snapshot alone found the arrays, when the
                                          site has no frame at all; 0 otherwise */
} frame_text_origin_t;

/* "train.py:42 in train_step, from main train.py:80, via forward
 * modeling_gpt2.py:239 (owner: pytorch-tensor)". */
void frame_text_origin(FILE *f, const frame_text_origin_t *origin);

#endif
