#define _GNU_SOURCE
#include "unwind.h"
#include "real_dl.h"

#if defined(__x86_64__)

#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

/* DWARF's numbers for the x86-64 registers the rules use. */
enum { DW_RBP = 6, DW_RSP = 7, DW_RA = 16 };

/* How a frame's CFA (the caller's stack pointer) is found. */
enum { CFA_RSP, CFA_RBP, CFA_AT_RBP };  /* rsp + off, rbp + off, *(rbp + off) */

/* How the caller's rbp is found. */
enum { RBP_SAME, RBP_AT_CFA, RBP_AT_RBP, RBP_LOST };  /* kept, *(cfa + off), *(rbp + off), unknown */

/* One address's rule, 8 bytes so that a table slot publishes it in one
 * store. bad: this unwinder cannot step the frame; end: the outermost
 * frame (its return address is undefined). */
typedef struct rule {
    int32_t cfa_offset;
    int16_t ra_offset;      /* the return address is at cfa + ra_offset */
    int8_t rbp_offset8;     /* in units of 8 bytes */
    uint8_t cfa_kind : 2, rbp_kind : 2, end : 1, bad : 1, known : 1;
} rule_t;
_Static_assert(sizeof(rule_t) == 8, "a rule is one word");

/* The rules seen so far, by address: open addressing, never removed (code
 * addresses repeat; 64k of them is far more than a program's call sites).
 * A slot's key is claimed with a compare-exchange, marked busy while its
 * rule is written, and published with a release store. */
#define RULE_SLOTS (1u << 16)
#define RULE_PROBES 16
#define KEY_BUSY (1ull << 63)

typedef struct rule_slot {
    _Atomic uint64_t key;
    _Atomic uint64_t rule;
} rule_slot_t;

static rule_slot_t *rule_slots;
static pthread_once_t rule_slots_once = PTHREAD_ONCE_INIT;

static void make_rule_slots(void)
{
    void *p = mmap(NULL, sizeof *rule_slots * RULE_SLOTS, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    rule_slots = p == MAP_FAILED ? NULL : p;
}

static uint64_t rule_word(rule_t r)
{
    uint64_t w;
    memcpy(&w, &r, sizeof w);
    return w;
}

static rule_t word_rule(uint64_t w)
{
    rule_t r;
    memcpy(&r, &w, sizeof r);
    return r;
}

static size_t slot_of(uintptr_t address)
{
    return (size_t)((address * 0x9e3779b97f4a7c15ull) >> 48) & (RULE_SLOTS - 1);
}

/* --- reading .eh_frame ------------------------------------------------- */

/* A cursor over unwind data that goes bad instead of reading past end. */
typedef struct reader {
    const uint8_t *p, *end;
    int ok;
} reader_t;

static uint64_t read_bytes(reader_t *r, size_t n)
{
    uint64_t v = 0;
    if (!r->ok || (size_t)(r->end - r->p) < n) {
        r->ok = 0;
        return 0;
    }
    memcpy(&v, r->p, n);  /* x86-64 is little-endian */
    r->p += n;
    return v;
}

static uint64_t read_uleb(reader_t *r)
{
    uint64_t v = 0;
    for (unsigned shift = 0; r->ok; shift += 7) {
        uint8_t b = (uint8_t)read_bytes(r, 1);
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            break;
    }
    return v;
}

static int64_t read_sleb(reader_t *r)
{
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b = 0x80;
    while (r->ok && (b & 0x80)) {
        b = (uint8_t)read_bytes(r, 1);
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    }
    if (shift < 64 && (b & 0x40))
        v |= ~0ull << shift;
    return (int64_t)v;
}

/* A pointer in DW_EH_PE encoding enc. pcrel is applied against the field's
 * own address, datarel against data_base; any other application (and
 * indirection) makes the reader bad, since the rules never need them. */
static uintptr_t read_pointer(reader_t *r, uint8_t enc, uintptr_t data_base)
{
    if (enc == 0xff)  /* DW_EH_PE_omit */
        return 0;
    uintptr_t field = (uintptr_t)r->p;
    uint64_t v;
    switch (enc & 0x0f) {
    case 0x00: v = read_bytes(r, 8); break;
    case 0x01: v = read_uleb(r); break;
    case 0x02: v = read_bytes(r, 2); break;
    case 0x03: v = read_bytes(r, 4); break;
    case 0x04: v = read_bytes(r, 8); break;
    case 0x09: v = (uint64_t)read_sleb(r); break;
    case 0x0a: v = (uint64_t)(int64_t)(int16_t)read_bytes(r, 2); break;
    case 0x0b: v = (uint64_t)(int64_t)(int32_t)read_bytes(r, 4); break;
    case 0x0c: v = read_bytes(r, 8); break;
    default: r->ok = 0; return 0;
    }
    switch (enc & 0xf0) {
    case 0x00: return (uintptr_t)v;
    case 0x10: return field + (uintptr_t)v;
    case 0x30: return data_base + (uintptr_t)v;
    default: r->ok = 0; return 0;
    }
}

/* What the CFA program says of the registers the rules need. */
typedef struct cfa_state {
    int cfa_register;       /* DW_RSP, DW_RBP, -1 for *(rbp + off), -2 unknown */
    int64_t cfa_offset;
    int rbp_kind;           /* RBP_* */
    int64_t rbp_offset;
    int ra_undefined, ra_known;
    int64_t ra_offset;
} cfa_state_t;

#define REMEMBER_DEPTH 8

/* Reads a DWARF expression block and says whether it is exactly
 * "DW_OP_breg6 off" (then *deref says whether a DW_OP_deref follows). */
static int rbp_expression(reader_t *r, int64_t *offset, int *deref)
{
    uint64_t length = read_uleb(r);
    if (!r->ok || (uint64_t)(r->end - r->p) < length)
        return r->ok = 0;
    reader_t block = { r->p, r->p + length, 1 };
    r->p += length;
    if (read_bytes(&block, 1) != 0x76)  /* DW_OP_breg6 */
        return 0;
    *offset = read_sleb(&block);
    *deref = block.p < block.end && read_bytes(&block, 1) == 0x06;  /* DW_OP_deref */
    return block.ok && block.p == block.end;
}

/* A register rule this unwinder does not follow (another register, an
 * expression, a value rule): rbp is then unknown to the frames above, and
 * a return address found that way makes the frame unsteppable (0). */
static int unfollowed_rule(cfa_state_t *state, uint64_t reg)
{
    if (reg == DW_RBP)
        state->rbp_kind = RBP_LOST;
    return reg != DW_RA;
}

/* A CFA rule of register plus offset; any register but rsp and rbp is one
 * the unwinder does not track. */
static void cfa_register_rule(cfa_state_t *state, uint64_t reg, int64_t offset)
{
    state->cfa_register = reg == DW_RSP || reg == DW_RBP ? (int)reg : -2;
    state->cfa_offset = offset;
}

/* A new CFA offset, which only a register rule can take. */
static void cfa_offset_rule(cfa_state_t *state, int64_t offset)
{
    state->cfa_offset = offset;
    if (state->cfa_register < 0)
        state->cfa_register = -2;
}

/* A CFA program being run: its reader, its factors, the state it moves,
 * the CIE's state (for DW_CFA_restore; NULL inside the CIE) and the states
 * DW_CFA_remember_state keeps. */
typedef struct cfa_run {
    reader_t *r;
    uint64_t code_align;
    int64_t data_align;
    cfa_state_t *state;
    const cfa_state_t *initial;
    cfa_state_t remembered[REMEMBER_DEPTH];
    int depth;
} cfa_run_t;

/* What one instruction does to the run: go on, advance the location, or
 * stop at something this unwinder does not read. */
enum cfa_step { CFA_NEXT, CFA_ADVANCE, CFA_FAIL };

/* reg is saved at CFA + offset. */
static void saved_at_offset(cfa_state_t *state, uint64_t reg, int64_t offset)
{
    if (reg == DW_RBP) {
        state->rbp_kind = RBP_AT_CFA;
        state->rbp_offset = offset;
    } else if (reg == DW_RA) {
        state->ra_known = 1;
        state->ra_undefined = 0;
        state->ra_offset = offset;
    }
}

/* reg's rule goes back to the CIE's. */
static enum cfa_step restore_rule(const cfa_run_t *run, uint64_t reg)
{
    const cfa_state_t *initial = run->initial;
    cfa_state_t *state = run->state;
    if (initial == NULL)
        return CFA_FAIL;
    if (reg == DW_RBP) {
        state->rbp_kind = initial->rbp_kind;
        state->rbp_offset = initial->rbp_offset;
    } else if (reg == DW_RA) {
        state->ra_known = initial->ra_known;
        state->ra_undefined = initial->ra_undefined;
        state->ra_offset = initial->ra_offset;
    }
    return CFA_NEXT;
}

/* The instructions that move the location (*delta, in bytes). Returns -1
 * for any other. */
static int advance_op(cfa_run_t *run, uint8_t op, uint64_t *delta)
{
    unsigned width = op == 0x02 ? 1 : op == 0x03 ? 2 : op == 0x04 ? 4 : 0;
    if ((op & 0xc0) == 0x40)  /* DW_CFA_advance_loc */
        *delta = (op & 0x3f) * run->code_align;
    else if (width != 0)      /* DW_CFA_advance_loc1, 2, 4 */
        *delta = read_bytes(run->r, width) * run->code_align;
    else
        return -1;
    return CFA_ADVANCE;
}

/* The instructions that give a register's rule as an offset from the CFA.
 * Returns -1 for any other. */
static int offset_op(cfa_run_t *run, uint8_t op)
{
    reader_t *r = run->r;
    uint64_t reg;
    int64_t offset;
    if ((op & 0xc0) == 0x80) {  /* DW_CFA_offset */
        reg = op & 0x3f;
        offset = (int64_t)read_uleb(r) * run->data_align;
    } else if (op == 0x05) {    /* DW_CFA_offset_extended */
        reg = read_uleb(r);
        offset = (int64_t)read_uleb(r) * run->data_align;
    } else if (op == 0x11) {    /* DW_CFA_offset_extended_sf */
        reg = read_uleb(r);
        offset = read_sleb(r) * run->data_align;
    } else if (op == 0x2f) {    /* DW_CFA_GNU_negative_offset_extended */
        reg = read_uleb(r);
        offset = -(int64_t)read_uleb(r) * run->data_align;
    } else {
        return -1;
    }
    saved_at_offset(run->state, reg, offset);
    return CFA_NEXT;
}

/* Every other register rule: restored, undefined, unchanged, in another
 * register, by an expression, a value. Returns -1 for any other
 * instruction. */
static int register_op(cfa_run_t *run, uint8_t op)
{
    reader_t *r = run->r;
    cfa_state_t *state = run->state;
    if ((op & 0xc0) == 0xc0)  /* DW_CFA_restore */
        return restore_rule(run, op & 0x3f);
    if (op == 0x06)           /* DW_CFA_restore_extended */
        return restore_rule(run, read_uleb(r));
    if (op == 0x07) {         /* DW_CFA_undefined */
        uint64_t reg = read_uleb(r);
        if (reg == DW_RA)
            state->ra_undefined = 1;
        else if (reg == DW_RBP)
            state->rbp_kind = RBP_LOST;
        return CFA_NEXT;
    }
    if (op == 0x08) {         /* DW_CFA_same_value */
        uint64_t reg = read_uleb(r);
        if (reg == DW_RBP)
            state->rbp_kind = RBP_SAME;
        return reg == DW_RA ? CFA_FAIL : CFA_NEXT;
    }
    if (op == 0x09) {         /* DW_CFA_register */
        uint64_t reg = read_uleb(r);
        (void)read_uleb(r);
        return unfollowed_rule(state, reg) ? CFA_NEXT : CFA_FAIL;
    }
    if (op == 0x10) {         /* DW_CFA_expression */
        uint64_t reg = read_uleb(r);
        int64_t offset = 0;
        int deref = 0;
        if (rbp_expression(r, &offset, &deref) && !deref && reg == DW_RBP) {
            state->rbp_kind = RBP_AT_RBP;
            state->rbp_offset = offset;
            return CFA_NEXT;
        }
        return unfollowed_rule(state, reg) ? CFA_NEXT : CFA_FAIL;
    }
    if (op == 0x14 || op == 0x15 || op == 0x16) {  /* DW_CFA_val_offset(_sf), DW_CFA_val_expression */
        uint64_t reg = read_uleb(r);
        if (op == 0x16) {
            uint64_t length = read_uleb(r);
            if ((uint64_t)(r->end - r->p) < length)
                return CFA_FAIL;
            r->p += length;
        } else if (op == 0x14) {
            (void)read_uleb(r);
        } else {
            (void)read_sleb(r);
        }
        return unfollowed_rule(state, reg) ? CFA_NEXT : CFA_FAIL;
    }
    return -1;
}

/* The CFA's own rule, the remembered states, and the instructions that
 * say nothing of the registers. Returns -1 for any other. */
static int cfa_op(cfa_run_t *run, uint8_t op)
{
    reader_t *r = run->r;
    cfa_state_t *state = run->state;
    int64_t offset = 0;
    int deref = 0;
    switch (op) {
    case 0x00:  /* DW_CFA_nop */
        return CFA_NEXT;
    case 0x0a:  /* DW_CFA_remember_state */
        if (run->depth == REMEMBER_DEPTH)
            return CFA_FAIL;
        run->remembered[run->depth++] = *state;
        return CFA_NEXT;
    case 0x0b:  /* DW_CFA_restore_state */
        if (run->depth == 0)
            return CFA_FAIL;
        *state = run->remembered[--run->depth];
        return CFA_NEXT;
    case 0x0c:  /* DW_CFA_def_cfa */ {
        uint64_t reg = read_uleb(r);
        cfa_register_rule(state, reg, (int64_t)read_uleb(r));
        return CFA_NEXT;
    }
    case 0x12:  /* DW_CFA_def_cfa_sf */ {
        uint64_t reg = read_uleb(r);
        cfa_register_rule(state, reg, read_sleb(r) * run->data_align);
        return CFA_NEXT;
    }
    case 0x0d:  /* DW_CFA_def_cfa_register */ {
        uint64_t reg = read_uleb(r);
        state->cfa_register = (reg == DW_RSP || reg == DW_RBP) && state->cfa_register >= 0
                              ? (int)reg : -2;
        return CFA_NEXT;
    }
    case 0x0e:  /* DW_CFA_def_cfa_offset */
        cfa_offset_rule(state, (int64_t)read_uleb(r));
        return CFA_NEXT;
    case 0x13:  /* DW_CFA_def_cfa_offset_sf */
        cfa_offset_rule(state, read_sleb(r) * run->data_align);
        return CFA_NEXT;
    case 0x0f:  /* DW_CFA_def_cfa_expression: only a realigned frame's *(rbp + off) */
        state->cfa_register = rbp_expression(r, &offset, &deref) && deref ? -1 : -2;
        state->cfa_offset = offset;
        return CFA_NEXT;
    case 0x2e:  /* DW_CFA_GNU_args_size */
        (void)read_uleb(r);
        return CFA_NEXT;
    }
    return -1;
}

/* Runs a CFA program from loc until the row that covers target, over
 * state; initial is the CIE's state (for DW_CFA_restore). Returns 1 when it
 * reached target or the program's end, 0 on something it does not read. */
static int run_cfa(reader_t *r, uintptr_t loc, uintptr_t target, uint64_t code_align,
                   int64_t data_align, cfa_state_t *state, const cfa_state_t *initial)
{
    cfa_run_t run = { .r = r, .code_align = code_align, .data_align = data_align,
                      .state = state, .initial = initial };
    while (r->ok && r->p < r->end) {
        uint8_t op = (uint8_t)read_bytes(r, 1);
        uint64_t delta = 0;
        int step = advance_op(&run, op, &delta);
        if (step < 0)
            step = offset_op(&run, op);
        if (step < 0)
            step = register_op(&run, op);
        if (step < 0)
            step = cfa_op(&run, op);
        if (step < 0 || step == CFA_FAIL)
            return 0;
        if (step == CFA_ADVANCE) {
            if (loc + delta > target)
                return r->ok;
            loc += delta;
        }
    }
    return r->ok;
}

/* What a CIE says of the FDEs that point to it. */
typedef struct cie_info {
    uint64_t code_align;
    int64_t data_align;
    uint8_t fde_encoding;
    int has_z;          /* an augmentation data length follows in each FDE */
} cie_info_t;

/* Reads the CIE at cie (its header, up to its initial instructions, where
 * c is left) into *out. Returns 0 for a CIE this unwinder reads: version 1
 * or 3, the return address in DW_RA, no signal frame ('S') and no unknown
 * augmentation. */
static int read_cie(const uint8_t *cie, const uint8_t *segment_end, reader_t *c, cie_info_t *out)
{
    *c = (reader_t){ cie, segment_end, 1 };
    uint64_t cie_length = read_bytes(c, 4);
    if (!c->ok || cie_length == 0 || cie_length >= 0xfffffff0u
        || cie_length > (uint64_t)(segment_end - c->p))
        return -1;
    c->end = c->p + cie_length;
    if (read_bytes(c, 4) != 0)  /* CIE id */
        return -1;
    uint8_t version = (uint8_t)read_bytes(c, 1);
    const char *augmentation = (const char *)c->p;
    while (c->ok && c->p < c->end && *c->p)
        c->p++;
    c->p++;
    if (!c->ok || c->p > c->end || (version != 1 && version != 3))
        return -1;
    *out = (cie_info_t){ 0 };
    out->code_align = read_uleb(c);  /* in this order: the reads are the CIE's fields */
    out->data_align = read_sleb(c);
    uint64_t ra_register = version == 1 ? read_bytes(c, 1) : read_uleb(c);
    out->has_z = augmentation[0] == 'z';
    if (out->has_z) {
        uint64_t aug_length = read_uleb(c);
        if (!c->ok || aug_length > (uint64_t)(c->end - c->p))
            return -1;
        const uint8_t *aug_end = c->p + aug_length;
        for (const char *a = augmentation + 1; *a && c->ok; a++) {
            if (*a == 'R') {
                out->fde_encoding = (uint8_t)read_bytes(c, 1);
            } else if (*a == 'L') {
                (void)read_bytes(c, 1);
            } else if (*a == 'P') {
                uint8_t enc = (uint8_t)read_bytes(c, 1);
                (void)read_pointer(c, enc & 0x0f, 0);  /* the personality routine: skipped */
            } else {
                return -1;  /* 'S' (a signal frame) and anything unknown */
            }
        }
        c->p = aug_end;
    } else if (augmentation[0] != '\0') {
        return -1;
    }
    return c->ok && c->p <= c->end && ra_register == DW_RA ? 0 : -1;
}

/* The rule a CFA program's state at the target gives, or bad when a value
 * does not fit the rule's fields. */
static rule_t rule_of_state(const cfa_state_t *state, rule_t bad)
{
    rule_t rule = { .known = 1 };
    if (state->ra_undefined) {
        rule.end = 1;
        return rule;
    }
    if (!state->ra_known || state->ra_offset < INT16_MIN || state->ra_offset > INT16_MAX
        || state->cfa_register == -2 || state->cfa_offset < INT32_MIN || state->cfa_offset > INT32_MAX)
        return bad;
    rule.cfa_kind = state->cfa_register == DW_RSP ? CFA_RSP
                  : state->cfa_register == DW_RBP ? CFA_RBP : CFA_AT_RBP;
    rule.cfa_offset = (int32_t)state->cfa_offset;
    rule.ra_offset = (int16_t)state->ra_offset;
    rule.rbp_kind = (uint8_t)state->rbp_kind;
    if (state->rbp_kind == RBP_AT_CFA || state->rbp_kind == RBP_AT_RBP) {
        if (state->rbp_offset % 8 != 0 || state->rbp_offset / 8 < INT8_MIN
            || state->rbp_offset / 8 > INT8_MAX)
            return bad;
        rule.rbp_offset8 = (int8_t)(state->rbp_offset / 8);
    }
    return rule;
}

/* The rule at target from the FDE at fde, in the loaded segment
 * [segment, segment_end) that no read may leave. */
static rule_t rule_from_fde(const uint8_t *fde, const uint8_t *segment,
                            const uint8_t *segment_end, uintptr_t target)
{
    rule_t bad = { .bad = 1, .known = 1 };
    if (fde < segment || fde >= segment_end)
        return bad;
    reader_t f = { fde, segment_end, 1 };
    uint64_t length = read_bytes(&f, 4);
    if (!f.ok || length == 0 || length >= 0xfffffff0u || length > (uint64_t)(segment_end - f.p))
        return bad;
    f.end = f.p + length;
    const uint8_t *cie_field = f.p;
    uint64_t cie_back = read_bytes(&f, 4);
    if (!f.ok || cie_back == 0 || cie_back > (uint64_t)(cie_field - segment))
        return bad;
    reader_t c;
    cie_info_t cie;
    if (read_cie(cie_field - cie_back, segment_end, &c, &cie) != 0)
        return bad;

    uintptr_t pc_begin = read_pointer(&f, cie.fde_encoding, 0);
    uintptr_t pc_range = read_pointer(&f, cie.fde_encoding & 0x0f, 0);
    if (!f.ok || target < pc_begin || target - pc_begin >= pc_range)
        return bad;
    if (cie.has_z) {
        uint64_t aug_length = read_uleb(&f);
        if (!f.ok || aug_length > (uint64_t)(f.end - f.p))
            return bad;
        f.p += aug_length;
    }

    cfa_state_t state = { .cfa_register = -2, .rbp_kind = RBP_SAME };
    if (!run_cfa(&c, pc_begin, UINTPTR_MAX, cie.code_align, cie.data_align, &state, NULL))
        return bad;
    cfa_state_t initial = state;
    if (!run_cfa(&f, pc_begin, target, cie.code_align, cie.data_align, &state, &initial))
        return bad;
    return rule_of_state(&state, bad);
}

typedef struct rule_search {
    uintptr_t target;
    rule_t rule;
    unsigned long long unloads;  /* the loader's count of objects unloaded */
} rule_search_t;

/* The loader's unload count when the table's rules were read: an object
 * unloaded and another loaded at its addresses would make them wrong. */
static _Atomic unsigned long long rules_unloads;

/* dl_iterate_phdr callback: when the object holds target, finds its FDE
 * through .eh_frame_hdr's table (sorted, datarel sdata4 pairs: what every
 * linker writes) and reads the rule. Runs under the loader's lock, so the
 * object cannot be unloaded meanwhile. */
static int search_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    rule_search_t *search = data;
    search->unloads = info->dlpi_subs;
    const ElfW(Phdr) *eh_frame_hdr = NULL;
    int holds = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && search->target >= start && search->target - start < ph->p_memsz)
            holds = 1;
        else if (ph->p_type == PT_GNU_EH_FRAME)
            eh_frame_hdr = ph;
    }
    if (!holds)
        return 0;
    if (eh_frame_hdr == NULL)
        return 1;  /* no unwind table: search->rule stays bad */
    const uint8_t *hdr = (const uint8_t *)(info->dlpi_addr + eh_frame_hdr->p_vaddr);
    const uint8_t *segment = NULL, *segment_end = NULL;  /* the one .eh_frame_hdr is in */
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        const uint8_t *start = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        if (ph->p_type == PT_LOAD && hdr >= start && hdr < start + ph->p_memsz) {
            segment = start;
            segment_end = start + ph->p_memsz;
        }
    }
    if (segment == NULL)
        return 1;
    reader_t r = { hdr, segment_end, 1 };
    uint8_t version = (uint8_t)read_bytes(&r, 1);
    uint8_t eh_frame_encoding = (uint8_t)read_bytes(&r, 1);
    uint8_t count_encoding = (uint8_t)read_bytes(&r, 1);
    uint8_t table_encoding = (uint8_t)read_bytes(&r, 1);
    (void)read_pointer(&r, eh_frame_encoding, (uintptr_t)hdr);
    uint64_t count = read_pointer(&r, count_encoding, (uintptr_t)hdr);
    if (!r.ok || version != 1 || table_encoding != 0x3b || count == 0
        || count > (uint64_t)(r.end - r.p) / 8)
        return 1;
    const uint8_t *table = r.p;
    intptr_t wanted = (intptr_t)(search->target - (uintptr_t)hdr);
    uint64_t lo = 0, hi = count;  /* the last entry starting at or below target */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        int32_t start;
        memcpy(&start, table + mid * 8, 4);
        if ((intptr_t)start <= wanted)
            lo = mid;
        else
            hi = mid;
    }
    int32_t start, fde_offset;
    memcpy(&start, table + lo * 8, 4);
    memcpy(&fde_offset, table + lo * 8 + 4, 4);
    if ((intptr_t)start > wanted)
        return 1;
    search->rule = rule_from_fde(hdr + fde_offset, segment, segment_end, search->target);
    return 1;
}

/* Empties the table after an object was unloaded, each slot's rule before
 * its key. A reader meanwhile reads the key again after the rule (see
 * rule_at), so a slot cleared or reused under it reads as a miss. */
static void forget_rules(unsigned long long unloads)
{
    for (size_t i = 0; i < RULE_SLOTS; i++) {
        atomic_store_explicit(&rule_slots[i].rule, 0, memory_order_relaxed);
        atomic_store_explicit(&rule_slots[i].key, 0, memory_order_release);
    }
    atomic_store_explicit(&rules_unloads, unloads, memory_order_release);
}

/* The rule for address, from the table or read and added to it. Unloads
 * are noticed on a miss (the loader is asked then anyway), so a rule can be
 * stale only until the next new address. */
static rule_t rule_at(uintptr_t address)
{
    size_t first = slot_of(address);
    size_t free_slot = RULE_SLOTS;
    rule_slot_t *own_slot = NULL;  /* address's slot, its rule lost to a clearing */
    for (size_t i = 0; i < RULE_PROBES; i++) {
        rule_slot_t *slot = &rule_slots[(first + i) & (RULE_SLOTS - 1)];
        uint64_t key = atomic_load_explicit(&slot->key, memory_order_acquire);
        if (key == address) {
            rule_t rule = word_rule(atomic_load_explicit(&slot->rule, memory_order_acquire));
            if (rule.known && atomic_load_explicit(&slot->key, memory_order_relaxed) == address)
                return rule;
            own_slot = slot;
            break;
        }
        if (key == 0) {
            free_slot = (first + i) & (RULE_SLOTS - 1);
            break;
        }
    }
    rule_search_t search = { .target = address, .rule = { .bad = 1, .known = 1 } };
    real_dl_iterate(search_object, &search);
    if (search.unloads != atomic_load_explicit(&rules_unloads, memory_order_acquire)) {
        forget_rules(search.unloads);
        return search.rule;
    }
    rule_slot_t *slot = own_slot != NULL ? own_slot
                      : free_slot < RULE_SLOTS ? &rule_slots[free_slot] : NULL;
    if (slot != NULL) {
        /* Claimed as it was seen (empty, or address's with its rule lost),
         * so that a slot taken meanwhile for another address is left be. */
        uint64_t expected = own_slot != NULL ? address : 0;
        if (atomic_compare_exchange_strong(&slot->key, &expected, address | KEY_BUSY)) {
            atomic_store_explicit(&slot->rule, rule_word(search.rule), memory_order_relaxed);
            atomic_store_explicit(&slot->key, address, memory_order_release);
        }
    }
    return search.rule;
}

/* --- stepping ------------------------------------------------------------ */

/* The calling thread's stack, where every read of the unwinder must fall. */
static __thread uintptr_t stack_low, stack_high;
static __thread int stack_state;  /* 0 unknown, 1 known, -1 not to be had */

static int thread_stack(void)
{
    if (stack_state != 0)
        return stack_state;
    pthread_attr_t attr;
    void *base;
    size_t size;
    stack_state = -1;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return stack_state;
    if (pthread_attr_getstack(&attr, &base, &size) == 0 && size > 0) {
        stack_low = (uintptr_t)base;
        stack_high = (uintptr_t)base + size;
        stack_state = 1;
    }
    pthread_attr_destroy(&attr);
    return stack_state;
}

/* Reads a word of the thread's stack at or above floor, the current frame's
 * stack pointer: every saved register lies there, and the whole range is
 * mapped, where the thread's reported stack below it may not be (a main
 * thread's stack grows into it; runtimes guard pages inside it). Saved
 * registers are not what AddressSanitizer guards, but it cannot tell them
 * from a frame's locals. */
__attribute__((no_sanitize_address)) static int load(uintptr_t address, uintptr_t floor,
                                                     uintptr_t *value)
{
    if (address < floor || address < stack_low || address > stack_high - sizeof *value)
        return 0;
    *value = *(const volatile uintptr_t *)address;
    return 1;
}

/* A frame's registers as far as the rules need them; bp is 0 unless
 * bp_valid, so that two states compare by value. */
typedef struct unwind_state {
    uintptr_t ip, sp, bp, bp_valid;
} unwind_state_t;

/* A frame as a capture stepped it: its state, the stack words it read to
 * find its caller's (0: none read), and how its step used rbp: read it
 * (uses_bp: the CFA, or where rbp was saved, is rbp-relative) or passed it
 * on unchanged to the caller (passes_bp). bp_live, set once the frame is
 * remembered, says whether the frames outside it can depend on its rbp. */
typedef struct frame_memo {
    unwind_state_t at;
    uintptr_t cfa_at, ra_at, bp_at;
    unsigned char uses_bp, passes_bp, bp_live;
} frame_memo_t;

/* Steps f->at to its caller's state, noting in f where it read. Returns 1,
 * 0 when the stack ends there (next then holds what the last step read, ip
 * 0), or -1 when this unwinder cannot step the frame. */
static int step(frame_memo_t *f, int innermost, unwind_state_t *next)
{
    const unwind_state_t *s = &f->at;
    f->cfa_at = f->ra_at = f->bp_at = 0;
    f->uses_bp = f->passes_bp = 0;
    /* A return address is just past its call: the call's row is one byte
     * before, which matters when the call was a function's last
     * instruction. */
    rule_t rule = rule_at(innermost ? s->ip : s->ip - 1);
    if (rule.bad)
        return -1;
    if (rule.end)
        return 0;
    f->uses_bp = rule.cfa_kind != CFA_RSP || rule.rbp_kind == RBP_AT_RBP;
    f->passes_bp = rule.rbp_kind == RBP_SAME;
    uintptr_t cfa;
    if (rule.cfa_kind == CFA_RSP) {
        cfa = s->sp + (uintptr_t)(intptr_t)rule.cfa_offset;
    } else if (!s->bp_valid) {
        return -1;
    } else if (rule.cfa_kind == CFA_RBP) {
        cfa = s->bp + (uintptr_t)(intptr_t)rule.cfa_offset;
    } else {
        f->cfa_at = s->bp + (uintptr_t)(intptr_t)rule.cfa_offset;
        if (!load(f->cfa_at, s->sp, &cfa))
            return -1;
    }
    f->ra_at = cfa + (uintptr_t)(intptr_t)rule.ra_offset;
    if (cfa <= s->sp || !load(f->ra_at, s->sp, &next->ip))
        return -1;
    next->sp = cfa;
    next->bp = s->bp;
    next->bp_valid = s->bp_valid;
    uintptr_t rbp_offset = (uintptr_t)((intptr_t)rule.rbp_offset8 * 8);
    if (rule.rbp_kind == RBP_AT_CFA || (rule.rbp_kind == RBP_AT_RBP && s->bp_valid)) {
        uintptr_t at = (rule.rbp_kind == RBP_AT_CFA ? cfa : s->bp) + rbp_offset;
        next->bp_valid = load(at, s->sp, &next->bp);
        if (next->bp_valid)
            f->bp_at = at;
    } else if (rule.rbp_kind == RBP_LOST) {
        next->bp_valid = 0;
    }
    if (!next->bp_valid)
        next->bp = 0;
    return next->ip == 0 ? 0 : 1;
}

/* --- recent stacks, remembered ------------------------------------------- */

/* Consecutive captures of a thread share their outer frames (the program's
 * main loop, the interpreter), and a training loop's allocations repeat
 * their whole stacks every step; stepping those frames again costs a rule
 * lookup and dependent loads per frame, the lines the step evicted since.
 * A step is a function of the frame's state, its rule and the words it
 * reads, so a frame in a remembered state whose words, and those of every
 * remembered frame outside it, still hold the values the remembered
 * callers were made of, unwinds to the remembered frames. Those checks are
 * loads from addresses known in advance, not a chain. A thread keeps its
 * recent stacks in slots, found by the stack pointer the capture starts
 * at; a capture that finds none there joins the last capture's stack where
 * the two meet (their outer frames). Only the parts of a state the outer
 * frames can read are compared: code built without frame pointers keeps
 * data in rbp, which differs call to call and matters to no caller. */
#define MEMO_SETS 16
#define MEMO_WAYS (UNWIND_SLOTS / MEMO_SETS)
/* More than stacks.c asks for (256 + 16); a slot's pages are touched only as
 * deep as its stack goes. */
#define SLOT_FRAMES 288

/* One remembered stack: frame[1] is the outermost frame, frame[count] the
 * innermost; frame[0].at is what frame[1]'s last step read when the stack
 * ended on a zero return address, and frame[0].bp_live says whether frames
 * past the end can read frame[1]'s rbp (they can when the capture stopped at
 * its max, not the stack's end). */
typedef struct memo_slot {
    int count;       /* 0: empty */
    int truncated;   /* the capture stopped at its max, not the stack's end */
    unsigned long long unloads;
    frame_memo_t frame[SLOT_FRAMES + 1];
} memo_slot_t;

typedef struct memo {
    int busy;        /* a capture is under way (a signal handler's is not remembered) */
    int last;        /* the slot the last capture left its stack in */
    uint64_t frames, reused;   /* frames captured, and of them taken from memory */
    unsigned char victim[MEMO_SETS];   /* the way each set replaces next */
    frame_memo_t fresh[SLOT_FRAMES];   /* this capture's stepped frames, innermost first */
    memo_slot_t slot[MEMO_SETS * MEMO_WAYS];
} memo_t;

static __thread memo_t *memo_mine __attribute__((tls_model("initial-exec")));
static __thread int memo_state __attribute__((tls_model("initial-exec")));  /* 0 untried, 1 made, -1 none */
static pthread_key_t memo_key;
static pthread_once_t memo_key_once = PTHREAD_ONCE_INIT;
static int memo_key_ready;

/* A finishing thread's memo goes; captures later in its exit do without. */
static void drop_memo(void *memo)
{
    memo_mine = NULL;
    memo_state = -1;
    munmap(memo, sizeof(memo_t));
}

static void make_memo_key(void)
{
    memo_key_ready = pthread_key_create(&memo_key, drop_memo) == 0;
}

/* The calling thread's memo, made on first use (its pages are touched only
 * as its slots fill), marked busy; NULL when none can be had or one is in
 * use further up this thread (a signal handler). */
static memo_t *take_memo(void)
{
    if (memo_state == 0) {
        memo_state = -1;
        pthread_once(&memo_key_once, make_memo_key);
        void *p = memo_key_ready ? mmap(NULL, sizeof(memo_t), PROT_READ | PROT_WRITE,
                                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
                                 : MAP_FAILED;
        if (p != MAP_FAILED && pthread_setspecific(memo_key, p) != 0) {
            munmap(p, sizeof(memo_t));
            p = MAP_FAILED;
        }
        if (p != MAP_FAILED) {
            memo_mine = p;
            memo_state = 1;
        }
    }
    memo_t *m = memo_mine;
    if (m == NULL || m->busy)
        return NULL;
    m->busy = 1;
    atomic_signal_fence(memory_order_seq_cst);  /* set before the memo is touched */
    return m;
}

/* Whether s is remembered frame f's state, as far as the frames outside f
 * can tell: rbp counts only where one of them may read it. */
static int same_state(const frame_memo_t *f, const unwind_state_t *s)
{
    return f->at.ip == s->ip && f->at.sp == s->sp &&
           (!f->bp_live || (f->at.bp == s->bp && f->at.bp_valid == s->bp_valid));
}

/* A word a remembered frame read, read again. No bounds to check: a
 * remembered frame is only checked from a state at its own stack pointer
 * or inside it, and every word it read lies at or above that pointer, in
 * the thread's live stack. */
__attribute__((no_sanitize_address)) static uintptr_t word_at(uintptr_t address)
{
    return *(const volatile uintptr_t *)address;
}

/* Whether f's reads still give its caller outer's state (as same_state
 * compares it). */
static int still_steps_to(const frame_memo_t *f, const frame_memo_t *outer)
{
    return (f->cfa_at == 0 || word_at(f->cfa_at) == outer->at.sp) &&
           (f->ra_at == 0 || word_at(f->ra_at) == outer->at.ip) &&
           (f->bp_at == 0 || !outer->bp_live || word_at(f->bp_at) == outer->at.bp);
}

/* 0 when every remembered frame from position out still steps as it did;
 * else the outermost that does not, below which a join may still hold. */
static int stale_step(const memo_slot_t *slot, int position)
{
    for (int q = 1; q <= position; q++)
        if (!still_steps_to(&slot->frame[q], &slot->frame[q - 1]))
            return q;
    return 0;
}

/* Works out bp_live for frames from..to of slot, outward in: a frame's rbp
 * matters when its own step reads it, or passes it to a caller to which it
 * matters. */
static void mark_live(memo_slot_t *slot, int from, int to)
{
    for (int q = from; q <= to; q++) {
        frame_memo_t *f = &slot->frame[q];
        f->bp_live = f->uses_bp || (f->passes_bp && slot->frame[q - 1].bp_live);
    }
}

/* The set of slots a stack whose capture starts at stack pointer sp goes
 * in. */
static int set_of(uintptr_t sp)
{
    return (int)(((uint64_t)(sp >> 4) * 0x9e3779b97f4a7c15ull) >> 60);
}

/* Whether the innermost frames of slot that a capture of max frames
 * takes still step as they did (all of them when the slot holds no more):
 * checked innermost first, where two stacks that start alike differ
 * (stale_step checks outermost first, for the outermost frame that
 * changed). A short capture (a site's key) checks its own frames, not the
 * whole stack a long one remembered; the frames it leaves unchecked are
 * checked by the capture that takes them. */
static int still_whole(const memo_slot_t *slot, int max)
{
    int lowest = slot->count - (max - 1) + 1;
    if (lowest < 1)
        lowest = 1;
    for (int q = slot->count; q >= lowest; q--)
        if (!still_steps_to(&slot->frame[q], &slot->frame[q - 1]))
            return 0;
    return 1;
}

/* A slot holding the very stack that starts in state s, as far as a
 * capture of max frames reads it, or NULL. Stacks that start alike (a
 * caller's frames of the same size) can share a set. */
static memo_slot_t *find_whole(memo_t *m, const unwind_state_t *s, unsigned long long unloads, int max)
{
    memo_slot_t *set = &m->slot[set_of(s->sp) * MEMO_WAYS];
    for (int w = 0; w < MEMO_WAYS; w++)
        if (set[w].count > 0 && set[w].unloads == unloads &&
            same_state(&set[w].frame[set[w].count], s) && still_whole(&set[w], max))
            return &set[w];
    return NULL;
}

/* The slot a capture that started at stack pointer sp keeps its stack in:
 * the one it was found whole in, or else the next its set replaces. */
static memo_slot_t *keep_in(memo_t *m, memo_slot_t *whole, uintptr_t sp)
{
    if (whole != NULL)
        return whole;
    int set = set_of(sp);
    int way = m->victim[set];
    m->victim[set] = (unsigned char)((way + 1) % MEMO_WAYS);
    return &m->slot[set * MEMO_WAYS + way];
}

/* Keeps in dst a capture that joined no remembered frame: its n frames, the
 * last of them (fresh[n - 1]) stepped to tail or not at all. */
static void remember(memo_t *m, memo_slot_t *dst, int n, int truncated,
                     const unwind_state_t *tail, unsigned long long unloads)
{
    dst->frame[0] = (frame_memo_t){ .at = *tail, .bp_live = (unsigned char)truncated };
    for (int i = 0; i < n; i++)
        dst->frame[n - i] = m->fresh[i];
    dst->count = n;
    dst->truncated = truncated;
    dst->unloads = unloads;
    mark_live(dst, 1, n);
}

/* Keeps in dst a capture that joined src's frame at position after
 * stepping its first fresh_count frames itself: src's frames out from the
 * join (dst may be src), then the fresh ones. */
static void rebase(memo_t *m, memo_slot_t *dst, const memo_slot_t *src, int position,
                   int fresh_count)
{
    if (position + fresh_count > SLOT_FRAMES) {
        dst->count = 0;
        return;
    }
    if (dst != src) {
        memcpy(dst->frame, src->frame, sizeof src->frame[0] * (size_t)(position + 1));
        dst->truncated = src->truncated;
        dst->unloads = src->unloads;
    }
    for (int i = 0; i < fresh_count; i++)
        dst->frame[position + fresh_count - i] = m->fresh[i];
    dst->count = position + fresh_count;
    mark_live(dst, position + 1, position + fresh_count);
}

/* Unwinds from s into out[1...] (out[0] is s.ip), joining remembered frames
 * where the stack still holds them: a stack that starts as s did before, or
 * else the last capture's. */
static int capture(uintptr_t *out, int max, unwind_state_t s, memo_t *m)
{
    unsigned long long unloads = atomic_load_explicit(&rules_unloads, memory_order_acquire);
    const uintptr_t start_sp = s.sp;
    memo_slot_t *join = NULL, *whole = NULL;
    int below = 0;  /* join's positions left to join */
    if (m != NULL) {
        whole = find_whole(m, &s, unloads, max);
        join = whole != NULL ? whole : &m->slot[m->last];
        below = join->unloads == unloads ? join->count : 0;
    }
    int lost = 0;  /* frames stepped past a truncated memory: remember nothing */
    frame_memo_t scratch;
    int n = 0;
    out[n++] = s.ip;
    for (;;) {
        while (below > 0 && join->frame[below].at.sp < s.sp)
            below--;
        /* A step of this capture may have met a new address and found an
         * unload, forgetting the rules the memory was stepped with. */
        if (below > 0 && same_state(&join->frame[below], &s) && (n == 1) == (below == join->count)
            && atomic_load_explicit(&rules_unloads, memory_order_acquire) == unloads) {
            int stale = join == whole && n == 1 ? 0 : stale_step(join, below);
            if (stale != 0) {
                below = stale - 1;
            } else {
                int total = n + below - 1;
                int take = total > max ? max - n : below - 1;
                for (int i = 0; i < take; i++)
                    out[n + i] = join->frame[below - 1 - i].at.ip;
                m->reused += (uint64_t)take;
                if (total >= max || !join->truncated) {
                    memo_slot_t *dst = keep_in(m, whole, start_sp);
                    rebase(m, dst, join, below, n - 1);
                    m->last = (int)(dst - m->slot);
                    return total > max ? max : total;
                }
                /* The remembered stack was cut at a max this capture has
                 * room past: step on from its outermost frame. */
                n = total;
                s = join->frame[1].at;
                below = 0;
                lost = 1;
            }
        }
        frame_memo_t *f = m != NULL && !lost ? &m->fresh[n - 1] : &scratch;
        *f = (frame_memo_t){ .at = s };
        unwind_state_t next = { 0, 0, 0, 0 };
        int stepped = 0;
        if (n < max)
            stepped = step(f, n == 1, &next);
        else
            f->uses_bp = 1;  /* not stepped: a capture that steps on from it may read its rbp */
        if (stepped == 1) {
            s = next;
            out[n++] = s.ip;
            continue;
        }
        if (m != NULL) {
            memo_slot_t *dst = keep_in(m, whole, start_sp);
            if (stepped < 0 || lost)
                dst->count = 0;
            else
                remember(m, dst, n, n >= max, &next, unloads);
            m->last = (int)(dst - m->slot);
        }
        return stepped < 0 ? -1 : n;
    }
}

__attribute__((noinline)) int unwind_capture(uintptr_t *out, int max)
{
    pthread_once(&rule_slots_once, make_rule_slots);
    if (rule_slots == NULL || max <= 0 || thread_stack() != 1)
        return -1;
    unwind_state_t s;
    __asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
                     : "=r"(s.ip), "=r"(s.sp), "=r"(s.bp));
    s.bp_valid = 1;
    memo_t *m = max <= SLOT_FRAMES ? take_memo() : NULL;
    int n = capture(out, max, s, m);
    if (m != NULL) {
        m->frames += n > 0 ? (uint64_t)n : 0;
        atomic_signal_fence(memory_order_seq_cst);  /* cleared after the memo is left */
        m->busy = 0;
    }
    return n;
}

unwind_counts_t unwind_counts(void)
{
    const memo_t *m = memo_mine;
    return m != NULL ? (unwind_counts_t){ m->frames, m->reused } : (unwind_counts_t){ 0, 0 };
}

int unwind_last_slot(void)
{
    const memo_t *m = memo_mine;
    return m != NULL ? m->last : -1;
}

#else

int unwind_capture(uintptr_t *out, int max)
{
    (void)out;
    (void)max;
    return -1;
}

unwind_counts_t unwind_counts(void)
{
    return (unwind_counts_t){ 0, 0 };
}

int unwind_last_slot(void)
{
    return -1;
}

#endif
