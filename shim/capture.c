#include "capture.h"
#include "config.h"
#include "python.h"
#include "selftime.h"
#include "stacks.h"

uint32_t capture_site(alloc_kind_t kind)
{
    if (config.stack_depth <= 0 && !config.python_frames)  /* stacks off: nothing to capture or time */
        return stacks_intern((uint32_t)kind, NULL, 0, NULL, 0);
    uintptr_t native[STACKS_MAX_FRAMES];
    python_frame_t python[STACKS_MAX_FRAMES];
    selftime_capture_t timing = { 0 };  /* read only when timing is on */
    selftime_capture_begin(&timing);
    int hint = -1;
    int native_count = config.stack_depth > 0 ? stacks_capture(native, config.stack_depth, &hint) : 0;
    selftime_capture_mark(&timing.native_end);
    int python_count = config.python_frames ? python_capture(python, config.python_depth) : 0;
    selftime_capture_mark(&timing.python_end);
    uint32_t site = stacks_intern_hinted(hint, (uint32_t)kind, native, native_count, python,
                                         python_count);
    selftime_capture_end(&timing, native_count);
    return site;
}
