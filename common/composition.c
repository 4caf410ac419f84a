/* composition.c: the roles' names and the composition's one line
 * (composition.h). */
#include "composition.h"
#include "report_format.h"
#include "units.h"

#include <string.h>

/* Whether s ends with suffix. */
static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Whether word is one of the NULL-terminated words. */
static int one_of(const char *word, const char *const *words)
{
    for (; *words != NULL; words++)
        if (strcmp(word, *words) == 0)
            return 1;
    return 0;
}

#define COMPOSITION_FIELDS(id, word, phrase) { #id, word, phrase },
static const struct {
    const char *name, *word, *phrase;
} roles[COMPOSITION_ROLE_COUNT] = { COMPOSITION_ROLES(COMPOSITION_FIELDS) };
#undef COMPOSITION_FIELDS

const char *composition_role_name(composition_role_t role)
{
    return roles[role].name;
}

const char *composition_role_phrase_for(composition_role_t role, unsigned frameworks)
{
    int torch_alone = frameworks == 0 || frameworks == 1u << REPORT_FRAMEWORK_torch;
    if (role == COMPOSITION_torch_cache)
        return report_frameworks_cache(frameworks, 0);
    if (role == COMPOSITION_outside_torch && !torch_alone)
        return "outside the frameworks' pools";
    return composition_role_phrase(role);
}

const char *composition_role_phrase(composition_role_t role)
{
    return roles[role].phrase;
}

int composition_role_of_word(const char *word)
{
    for (int r = 0; r < COMPOSITION_ROLE_COUNT; r++)
        if (roles[r].word != NULL && strcmp(roles[r].word, word) == 0)
            return r;
    return -1;
}

int composition_role_of_name(const char *name)
{
    for (int r = 0; r < COMPOSITION_ROLE_COUNT; r++)
        if (strcmp(roles[r].name, name) == 0)
            return r;
    return -1;
}

void composition_add(composition_t *c, composition_role_t role, const char *name, uint64_t bytes)
{
    c->bytes[role] = units_add(c->bytes[role], bytes);
    c->gpu_bytes = units_add(c->gpu_bytes, bytes);
    if (name == NULL || bytes == 0)
        return;
    composition_part_t *top = c->by[role];
    int at = COMPOSITION_TOP;
    for (int i = 0; i < COMPOSITION_TOP; i++)
        if (top[i].name == NULL || top[i].bytes < bytes) {
            at = i;
            break;
        }
    if (at == COMPOSITION_TOP)
        return;
    memmove(&top[at + 1], &top[at], (size_t)(COMPOSITION_TOP - 1 - at) * sizeof *top);
    top[at] = (composition_part_t){ name, bytes };
}

int composition_has_tensors(const composition_t *c)
{
    for (int r = 0; r < COMPOSITION_ROLE_COUNT; r++)
        if (r != COMPOSITION_outside_torch && c->bytes[r] > 0)
            return 1;
    return 0;
}

void composition_print(FILE *f, int indent, composition_moment_t moment, const composition_t *c)
{
    static const char *const leads[] = {
        [COMPOSITION_AT_FINISH] = "GPU memory at Python's finish",
        [COMPOSITION_AT_OOM] = "GPU memory at the failure",
        [COMPOSITION_AT_PEAK] = "Tensors at their peak",
        [COMPOSITION_AT_REPORT] = "GPU memory when this report was taken",
    };
    if (!composition_has_tensors(c))
        return;
    char size[UNITS_SIZE_BUF];
    fprintf(f, "%*s%s%s, %s:", indent, "", leads[moment], c->inferred ? ", by the calls that made them" : "",
            units_format_size(c->gpu_bytes, size));
    const char *sep = " ";
    for (int r = 0; r < COMPOSITION_ROLE_COUNT; r++) {
        if (c->bytes[r] == 0)
            continue;
        fprintf(f, "%s%s %s", sep, composition_role_phrase_for(r, c->frameworks),
                units_format_size(c->bytes[r], size));
        if (c->by[r][0].name != NULL)
            fprintf(f, " (%s%s)", c->by[r][0].name, c->by[r][1].name != NULL ? ", ..." : "");
        sep = ", ";
    }
    fputs(".\n", f);
}

/* The role one frame decides, or -1 when it decides none. function may be
 * qualified ("Module._call_impl"): its last part is compared. */
static int role_of_frame(const char *function, const char *file)
{
    const char *dot = strrchr(function, '.');
    if (dot != NULL)
        function = dot + 1;
    static const char *const moves[] = { "_apply", "to", "cuda", "load_state_dict",
                                         "_load_from_state_dict", NULL };
    static const char *const builds[] = { "__init__", "reset_parameters", NULL };
    static const char *const calls[] = { "_call_impl", "_wrapped_call_impl", NULL };
    if (strstr(file, "/torch/optim/") != NULL)
        return COMPOSITION_optimizer_state;
    if (strstr(file, "/torch/autograd/") != NULL)
        return COMPOSITION_gradients;
    if (ends_with(file, "/torch/nn/modules/module.py") && one_of(function, moves))
        return COMPOSITION_parameters;
    if (strstr(file, "/torch/nn/") != NULL && one_of(function, builds))
        return COMPOSITION_parameters;
    if (ends_with(file, "/torch/nn/modules/module.py") && one_of(function, calls))
        return COMPOSITION_activations;
    return -1;
}

composition_role_t composition_role_of_call(const char *const *functions, const char *const *files,
                                            size_t n, int python)
{
    if (n == 0)
        return python ? COMPOSITION_gradients : COMPOSITION_other_tensors;
    for (size_t i = 0; i < n; i++) {
        int role = functions[i] != NULL && files[i] != NULL ? role_of_frame(functions[i], files[i]) : -1;
        if (role >= 0)
            return (composition_role_t)role;
    }
    return COMPOSITION_other_tensors;
}
