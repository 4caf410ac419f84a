/* diagnosis.c: each cause's sentence and cure (docs/diagnosis.md). */
#include "diagnosis.h"
#include "units.h"

int diagnosis_oom(FILE *f, int indent, const diagnosis_oom_t *oom)
{
    if (oom->reserved == 0)
        return 0;
    char reserved[UNITS_SIZE_BUF], allocated[UNITS_SIZE_BUF], unused[UNITS_SIZE_BUF], asked[UNITS_SIZE_BUF];
    uint64_t free_bytes = oom->reserved > oom->allocated ? oom->reserved - oom->allocated : 0;
    units_format_size(oom->reserved, reserved);
    units_format_size(oom->allocated, allocated);
    units_format_size(free_bytes, unused);
    units_format_size(oom->asked, asked);
    fprintf(f, "%*sPyTorch had %s reserved, %s of it in tensors and %s cached but unused.\n", indent, "",
            reserved, allocated, unused);
    if (free_bytes < oom->asked || oom->asked == 0)
        return 0;
    fprintf(f, "%*sCause: fragmentation. The cache held more unused memory than the %s asked, but in no\n"
               "%*sblock large enough for it.\n"
               "%*sCure: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (the cache's segments then grow\n"
               "%*sin place instead of leaving gaps); torch.cuda.empty_cache() between phases of different\n"
               "%*ssizes gives the cache back to the driver.\n",
            indent, "", asked, indent, "", indent, "", indent, "", indent, "");
    return 1;
}
