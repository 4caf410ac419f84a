/* rank.c: the process's rank, local rank and job, from its launcher's
 * variables (rank.h). */
#include "rank.h"
#include "config.h"
#include "log.h"

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

/* One variable a launcher sets, and whether its refusal was said. */
typedef struct launcher_variable {
    const char *name;
    _Atomic int warned;
} launcher_variable_t;

static launcher_variable_t global_ranks[] = {
    { "RANK", 0 }, { "SLURM_PROCID", 0 }, { "OMPI_COMM_WORLD_RANK", 0 }, { "PMI_RANK", 0 },
    { "PMIX_RANK", 0 },
};
static launcher_variable_t local_ranks[] = {
    { "LOCAL_RANK", 0 }, { "SLURM_LOCALID", 0 }, { "OMPI_COMM_WORLD_LOCAL_RANK", 0 },
    { "MPI_LOCALRANKID", 0 }, { "PMI_LOCAL_RANK", 0 },
};
static launcher_variable_t jobs[] = {
    { "SLURM_JOB_ID", 0 }, { "PBS_JOBID", 0 }, { "LSB_JOBID", 0 }, { "TORCHELASTIC_RUN_ID", 0 },
};

/* What a variable is used as, and what its value must be. */
typedef struct use {
    const char *what;           /* "rank" */
    const char *must_be;        /* "a whole number" */
    int (*is_valid)(const char *value);
} use_t;

/* Says once that a variable's value is not used, on one line whatever the
 * value holds (a newline would split it). */
static void refuse(launcher_variable_t *v, const char *value, const use_t *use)
{
    if (atomic_exchange(&v->warned, 1))
        return;
    char shown[64];
    size_t n = 0;
    for (; value[n] != '\0' && n < sizeof shown - 1; n++)
        shown[n] = (unsigned char)value[n] < 0x20 || value[n] == 0x7f ? '?' : value[n];
    shown[n] = '\0';
    log_line("%s=%s is not %s; it is not used as the %s", v->name, shown, use->must_be, use->what);
}

/* Whether value is a rank: 1 to 9 decimal digits. */
static int is_rank(const char *value)
{
    size_t digits = strspn(value, "0123456789");
    return digits > 0 && digits <= 9 && value[digits] == '\0';
}

/* Whether value may name a job in a file's path. */
static int is_job(const char *value)
{
    size_t n = strspn(value, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-");
    return n > 0 && n <= 64 && value[n] == '\0' && value[0] != '.' && strcmp(value, "none") != 0;
}

static const use_t as_rank = { "rank", "a whole number", is_rank };
static const use_t as_job = { "job", "a job id of letters, digits, '.', '_' and '-'", is_job };

/* The first of count variables whose value use takes; the others set
 * before it are refused. */
static const char *first_of(launcher_variable_t *vars, size_t count, const use_t *use)
{
    for (size_t i = 0; i < count; i++) {
        const char *value = config_getenv(vars[i].name);
        if (value == NULL || *value == '\0')
            continue;
        if (use->is_valid(value))
            return value;
        if (strcmp(value, "none") != 0)  /* torchrun's run id when none was given */
            refuse(&vars[i], value, use);
    }
    return NULL;
}

#define COUNT(vars) (sizeof vars / sizeof vars[0])

const char *rank_local(void)
{
    return first_of(local_ranks, COUNT(local_ranks), &as_rank);
}

const char *rank_of_process(void)
{
    const char *rank = first_of(global_ranks, COUNT(global_ranks), &as_rank);
    return rank != NULL ? rank : rank_local();
}

const char *rank_job(void)
{
    return first_of(jobs, COUNT(jobs), &as_job);
}
