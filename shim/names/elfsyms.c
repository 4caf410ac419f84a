/* elfsyms.c: function names from an ELF file's own symbol tables.
 *
 * The file is mapped read-only and read in place: headers and tables are
 * checked against the mapping's size before any use (the file is outside
 * the shim's control, and may be truncated, corrupt or another machine's),
 * and names stay in the mapping, so a table costs 16 bytes a function. */
#define _GNU_SOURCE
#include "elfsyms.h"
#include "real_dl.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* MiniDebugInfo is a small ELF file of symbols (tens to hundreds of KiB):
 * more than this, decompressed, is not what it claims to be. */
#define MINI_MAX_BYTES ((size_t)256 << 20)
#define MINI_MEMLIMIT ((uint64_t)256 << 20)
/* Sections beyond this are a corrupt header, not a real object. */
#define MAX_SECTIONS (1u << 20)
/* How far back a lookup steps past symbols that end below the address, to
 * an enclosing one (a local label with a size inside a function). */
#define ENCLOSING_STEPS 8

/* One function: its start and size in the file's virtual addresses, and
 * its name as an offset into one of the string tables. The size's top bits
 * say which table (MiniDebugInfo's or the file's) and the symbol's binding,
 * which decides between aliases at one address: 29 bits of size are 512
 * MiB, more than any function. */
struct sym {
    uint64_t addr;
    uint32_t size_flags;
    uint32_t name;
};

#define SYM_SIZE_BITS 29
#define SYM_SIZE(s) ((s)->size_flags & ((1u << SYM_SIZE_BITS) - 1))
#define SYM_MINI (1u << 31)           /* name is in MiniDebugInfo's table */
#define SYM_RANK_SHIFT SYM_SIZE_BITS  /* 0 global, 1 weak, 2 local */
#define SYM_RANK(s) (((s)->size_flags >> SYM_RANK_SHIFT) & 3u)

/* An ELF image in memory, its section table checked to lie inside it. */
struct image {
    const unsigned char *data;
    size_t size;
    const ElfW(Ehdr) *eh;
    const ElfW(Shdr) *sh;
    size_t shnum;
    const char *shstr; /* section names; NULL when absent or out of range */
    size_t shstr_size;
};

struct elfsyms {
    void *map;
    size_t map_size;
    struct image file;
    unsigned char *mini; /* decompressed .gnu_debugdata, or NULL */
    struct image mini_image;
    const char *strtab[2]; /* [0] the file's, [1] MiniDebugInfo's */
    size_t strtab_size[2];
    struct sym *syms;
    size_t count;
};

/* ---- images ------------------------------------------------------------ */

/* Whether [off, off + len) lies inside an image of size bytes. */
static int in_range(uint64_t off, uint64_t len, size_t size)
{
    return off <= size && len <= size - off;
}

/* Checks the ELF header and section table of data[0..size) and fills img.
 * Returns 0, or -1 for anything but an ELF image of this machine's class
 * and byte order whose section table lies inside it. */
static int parse_image(struct image *img, const unsigned char *data, size_t size)
{
    memset(img, 0, sizeof(*img));
    if (size < sizeof(ElfW(Ehdr)) || memcmp(data, ELFMAG, SELFMAG) != 0)
        return -1;
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)data;
#if __BYTE_ORDER == __LITTLE_ENDIAN
    const unsigned char order = ELFDATA2LSB;
#else
    const unsigned char order = ELFDATA2MSB;
#endif
    if (eh->e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32)
        || eh->e_ident[EI_DATA] != order)
        return -1;
    img->data = data;
    img->size = size;
    img->eh = eh;
    if (eh->e_shoff == 0 || eh->e_shentsize != sizeof(ElfW(Shdr))
        || !in_range(eh->e_shoff, sizeof(ElfW(Shdr)), size) || eh->e_shoff % sizeof(void *))
        return 0; /* no usable section table: an image with no symbols */
    const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(data + eh->e_shoff);
    /* More than 0xff00 sections: the count and the names' index move into
     * section 0 (the ELF extended numbering). */
    size_t shnum = eh->e_shnum ? eh->e_shnum : sh[0].sh_size;
    size_t shstrndx = eh->e_shstrndx == SHN_XINDEX ? sh[0].sh_link : eh->e_shstrndx;
    if (shnum == 0 || shnum > MAX_SECTIONS
        || !in_range(eh->e_shoff, (uint64_t)shnum * sizeof(ElfW(Shdr)), size))
        return 0;
    img->sh = sh;
    img->shnum = shnum;
    if (shstrndx < shnum && sh[shstrndx].sh_type == SHT_STRTAB
        && in_range(sh[shstrndx].sh_offset, sh[shstrndx].sh_size, size)) {
        img->shstr = (const char *)data + sh[shstrndx].sh_offset;
        img->shstr_size = sh[shstrndx].sh_size;
    }
    return 0;
}

/* The contents of section sh, or NULL when it has none in the image
 * (SHT_NOBITS, as in a debug file's code sections) or they lie outside. */
static const unsigned char *section_data(const struct image *img, const ElfW(Shdr) *sh)
{
    if (sh->sh_type == SHT_NOBITS || !in_range(sh->sh_offset, sh->sh_size, img->size))
        return NULL;
    return img->data + sh->sh_offset;
}

/* The first section named name, or NULL. */
static const ElfW(Shdr) *section_named(const struct image *img, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; img->shstr && i < img->shnum; i++) {
        size_t off = img->sh[i].sh_name;
        if (off < img->shstr_size && img->shstr_size - off > len
            && memcmp(img->shstr + off, name, len + 1) == 0)
            return &img->sh[i];
    }
    return NULL;
}

/* The first section of type, or NULL. */
static const ElfW(Shdr) *section_typed(const struct image *img, uint32_t type)
{
    for (size_t i = 0; i < img->shnum; i++)
        if (img->sh[i].sh_type == type)
            return &img->sh[i];
    return NULL;
}

/* The symbols of table sh (SHT_SYMTAB or SHT_DYNSYM) and, in *strtab, the
 * string table it links to; *count 0 when either is unusable. */
static const ElfW(Sym) *symbols_of(const struct image *img, const ElfW(Shdr) *sh, size_t *count,
                                   const char **strtab, size_t *strtab_size)
{
    *count = 0;
    if (sh == NULL || sh->sh_entsize != sizeof(ElfW(Sym)) || sh->sh_link >= img->shnum)
        return NULL;
    const ElfW(Shdr) *str = &img->sh[sh->sh_link];
    const unsigned char *syms = section_data(img, sh);
    const unsigned char *strs = str->sh_type == SHT_STRTAB ? section_data(img, str) : NULL;
    if (syms == NULL || strs == NULL || (uintptr_t)syms % sizeof(void *) != 0
        || str->sh_size > UINT32_MAX)
        return NULL;
    *count = sh->sh_size / sizeof(ElfW(Sym));
    *strtab = (const char *)strs;
    *strtab_size = str->sh_size;
    return (const ElfW(Sym) *)syms;
}

/* ---- MiniDebugInfo ---------------------------------------------------- */

/* liblzma, found once and never unloaded (the symbolizer's rule: an
 * unload would run exit handlers on the reporter thread). The shim does
 * not link it: where it is absent, MiniDebugInfo is skipped. */
static struct {
    int tried;
    typeof(&lzma_stream_decoder) stream_decoder;
    typeof(&lzma_code) code;
    typeof(&lzma_end) end;
} xz;

/* Whether liblzma's decoder is usable; loads it the first time. */
static int have_xz(void)
{
    if (!xz.tried) {
        xz.tried = 1;
        void *h = real_dl_open("liblzma.so.5", RTLD_NOW | RTLD_LOCAL);
        if (h != NULL) {
            xz.stream_decoder = (typeof(xz.stream_decoder))real_dl_lookup(h, "lzma_stream_decoder");
            xz.code = (typeof(xz.code))real_dl_lookup(h, "lzma_code");
            xz.end = (typeof(xz.end))real_dl_lookup(h, "lzma_end");
        }
    }
    return xz.stream_decoder != NULL && xz.code != NULL && xz.end != NULL;
}

/* Decompresses the xz stream in[0..size) into a malloc'd buffer, bounded
 * by MINI_MAX_BYTES. Returns it with its length in *out_size, or NULL. */
static unsigned char *unxz(const unsigned char *in, size_t size, size_t *out_size)
{
    lzma_stream s = LZMA_STREAM_INIT;
    if (!have_xz() || xz.stream_decoder(&s, MINI_MEMLIMIT, 0) != LZMA_OK)
        return NULL;
    size_t cap = 0;
    unsigned char *out = NULL;
    s.next_in = in;
    s.avail_in = size;
    lzma_ret r = LZMA_OK;
    while (r == LZMA_OK) {
        if (s.avail_out == 0) {
            size_t used = cap;
            size_t grown = cap ? cap * 2 : size * 4 + 4096;
            unsigned char *p = grown <= MINI_MAX_BYTES ? realloc(out, grown) : NULL;
            if (p == NULL)
                break;
            out = p;
            cap = grown;
            s.next_out = out + used;
            s.avail_out = cap - used;
        }
        r = xz.code(&s, LZMA_FINISH);
    }
    size_t used = cap - s.avail_out;
    xz.end(&s);
    if (r != LZMA_STREAM_END) {
        free(out);
        return NULL;
    }
    *out_size = used;
    return out;
}

/* ---- tables ------------------------------------------------------------ */

/* Whether sym is a function with an address and a size: what a return
 * address can lie in. */
static int is_function(const ElfW(Sym) *sym)
{
    int type = ELF64_ST_TYPE(sym->st_info);
    return (type == STT_FUNC || type == STT_GNU_IFUNC) && sym->st_shndx != SHN_UNDEF
        && sym->st_value != 0 && sym->st_size != 0;
}

/* Appends the functions of syms[0..n) to t->syms (room checked by the
 * caller), their names in string table `which`. */
static void collect(elfsyms_t *t, const ElfW(Sym) *syms, size_t n, int which)
{
    for (size_t i = 0; i < n; i++) {
        const ElfW(Sym) *s = &syms[i];
        if (!is_function(s) || s->st_name >= t->strtab_size[which])
            continue;
        int bind = ELF64_ST_BIND(s->st_info);
        uint32_t rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
        uint64_t size = s->st_size < (1u << SYM_SIZE_BITS) ? s->st_size : (1u << SYM_SIZE_BITS) - 1;
        t->syms[t->count++] = (struct sym){
            .addr = s->st_value,
            .size_flags = (uint32_t)size | rank << SYM_RANK_SHIFT | (which ? SYM_MINI : 0),
            .name = (uint32_t)s->st_name,
        };
    }
}

/* Orders by address; at one address the global name first, then the
 * longer symbol, so the one kept of several aliases is the exported name. */
static int sym_cmp(const void *a, const void *b)
{
    const struct sym *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    if (SYM_RANK(x) != SYM_RANK(y))
        return SYM_RANK(x) < SYM_RANK(y) ? -1 : 1;
    return SYM_SIZE(x) > SYM_SIZE(y) ? -1 : SYM_SIZE(x) < SYM_SIZE(y);
}

/* How many of syms[0..n) are functions. */
static size_t count_functions(const ElfW(Sym) *syms, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += is_function(&syms[i]);
    return k;
}

/* ---- public ------------------------------------------------------------ */

elfsyms_t *elfsyms_open(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    void *map = MAP_FAILED;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0
        && (uint64_t)st.st_size <= SIZE_MAX)
        map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return NULL;
    elfsyms_t *t = calloc(1, sizeof(*t));
    if (t == NULL || parse_image(&t->file, map, (size_t)st.st_size) != 0) {
        munmap(map, (size_t)st.st_size);
        free(t);
        return NULL;
    }
    t->map = map;
    t->map_size = (size_t)st.st_size;
    return t;
}

int elfsyms_is_loaded_as(const elfsyms_t *t, const struct dl_phdr_info *info)
{
    const ElfW(Ehdr) *eh = t->file.eh;
    size_t phnum = info->dlpi_phnum;
    if (eh->e_phnum != phnum || eh->e_phentsize != sizeof(ElfW(Phdr))
        || !in_range(eh->e_phoff, phnum * sizeof(ElfW(Phdr)), t->map_size))
        return 0;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(t->file.data + eh->e_phoff);
    if (memcmp(ph, info->dlpi_phdr, phnum * sizeof(ElfW(Phdr))) != 0)
        return 0;
    /* The layout can survive a rebuild; the build id, in a note, cannot. */
    for (size_t i = 0; i < phnum; i++) {
        if (ph[i].p_type != PT_NOTE)
            continue;
        if (!in_range(ph[i].p_offset, ph[i].p_filesz, t->map_size)
            || memcmp(t->file.data + ph[i].p_offset,
                      (const void *)(info->dlpi_addr + ph[i].p_vaddr), ph[i].p_filesz) != 0)
            return 0;
    }
    return 1;
}

size_t elfsyms_load(elfsyms_t *t, size_t *budget)
{
    if (t->syms != NULL || t->count != 0)
        return t->count;
    /* .symtab names static functions too; .dynsym only exported ones. */
    const ElfW(Shdr) *table = section_typed(&t->file, SHT_SYMTAB);
    size_t n0 = 0, n1 = 0;
    const ElfW(Sym) *s0 = symbols_of(&t->file, table, &n0, &t->strtab[0], &t->strtab_size[0]);
    if (n0 == 0)
        s0 = symbols_of(&t->file, section_typed(&t->file, SHT_DYNSYM), &n0, &t->strtab[0],
                        &t->strtab_size[0]);
    const ElfW(Shdr) *mini = section_named(&t->file, ".gnu_debugdata");
    const unsigned char *packed = mini ? section_data(&t->file, mini) : NULL;
    const ElfW(Sym) *s1 = NULL;
    size_t mini_size;
    if (packed != NULL && (t->mini = unxz(packed, mini->sh_size, &mini_size)) != NULL
        && parse_image(&t->mini_image, t->mini, mini_size) == 0)
        s1 = symbols_of(&t->mini_image, section_typed(&t->mini_image, SHT_SYMTAB), &n1,
                        &t->strtab[1], &t->strtab_size[1]);
    size_t want = count_functions(s0, n0) + count_functions(s1, n1);
    if (want == 0 || want > *budget)
        return 0;
    t->syms = malloc(want * sizeof(*t->syms));
    if (t->syms == NULL)
        return 0;
    collect(t, s0, n0, 0);
    collect(t, s1, n1, 1);
    qsort(t->syms, t->count, sizeof(*t->syms), sym_cmp);
    /* One entry per address: the first, by sym_cmp's preference. */
    size_t kept = 0;
    for (size_t i = 0; i < t->count; i++)
        if (kept == 0 || t->syms[kept - 1].addr != t->syms[i].addr)
            t->syms[kept++] = t->syms[i];
    t->count = kept;
    *budget -= want;
    return t->count;
}

const char *elfsyms_lookup(const elfsyms_t *t, uint64_t vaddr, uint64_t *offset)
{
    size_t lo = 0, hi = t->count;
    while (lo < hi) { /* first symbol starting above vaddr */
        size_t mid = lo + (hi - lo) / 2;
        if (t->syms[mid].addr <= vaddr)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo, steps = 0; i > 0 && steps < ENCLOSING_STEPS; i--, steps++) {
        const struct sym *s = &t->syms[i - 1];
        if (vaddr - s->addr >= SYM_SIZE(s))
            continue;
        int which = (s->size_flags & SYM_MINI) != 0;
        const char *name = t->strtab[which] + s->name;
        /* The table is the file's: its string must end inside it. */
        if (memchr(name, '\0', t->strtab_size[which] - s->name) == NULL || *name == '\0')
            return NULL;
        *offset = vaddr - s->addr;
        return name;
    }
    return NULL;
}

int elfsyms_build_id(const char *path, unsigned char *out, size_t cap)
{
    elfsyms_t *t = elfsyms_open(path);
    if (t == NULL)
        return -1;
    int len = 0;
    for (size_t i = 0; i < t->file.shnum && len == 0; i++) {
        const ElfW(Shdr) *sh = &t->file.sh[i];
        const unsigned char *p = sh->sh_type == SHT_NOTE ? section_data(&t->file, sh) : NULL;
        size_t left = p ? sh->sh_size : 0;
        /* Notes: a header, then name and descriptor, each padded to 4. */
        while (left >= sizeof(ElfW(Nhdr))) {
            ElfW(Nhdr) nh;
            memcpy(&nh, p, sizeof(nh));
            size_t name_len = ((size_t)nh.n_namesz + 3) & ~(size_t)3;
            size_t desc_len = ((size_t)nh.n_descsz + 3) & ~(size_t)3;
            if (name_len > left - sizeof(nh) || desc_len > left - sizeof(nh) - name_len)
                break;
            const unsigned char *name = p + sizeof(nh);
            if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(name, "GNU", 4) == 0
                && nh.n_descsz > 0 && nh.n_descsz <= cap) {
                memcpy(out, name + name_len, nh.n_descsz);
                len = (int)nh.n_descsz;
                break;
            }
            p += sizeof(nh) + name_len + desc_len;
            left -= sizeof(nh) + name_len + desc_len;
        }
    }
    elfsyms_close(t);
    return len;
}

void elfsyms_close(elfsyms_t *t)
{
    if (t == NULL)
        return;
    munmap(t->map, t->map_size);
    free(t->mini);
    free(t->syms);
    free(t);
}
