/* rank.h: which process of a job this is, as its launcher says: torchrun
 * (and accelerate, Lightning), Slurm, Open MPI, and the PMI and PMIx
 * launchers (MPICH, Intel MPI, PRRTE). Read from the environment the
 * launcher set, each value checked before it may name a file. */
#ifndef GPULEAK_RANK_H
#define GPULEAK_RANK_H

/* The process's rank in its job: the first of RANK, SLURM_PROCID,
 * OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK that is 1 to 9 decimal digits;
 * else its local rank (rank_local); NULL when none is. RANK comes first: a
 * torchrun started by srun sets it per process, where SLURM_PROCID numbers
 * the srun tasks. A value that is set but not a number (a path, say: it
 * goes into the report's path) is passed over, with one line on stderr the
 * first time. The string is the environment's. */
const char *rank_of_process(void);

/* The process's rank on its node: LOCAL_RANK, SLURM_LOCALID,
 * OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, PMI_LOCAL_RANK, as above. */
const char *rank_local(void);

/* The job's id: SLURM_JOB_ID, PBS_JOBID, LSB_JOBID, or torchrun's
 * TORCHELASTIC_RUN_ID (not its default, "none"), when it is 1 to 64 of
 * letters, digits, '.', '_' and '-' not starting with '.'; else NULL (a
 * refused value named once). */
const char *rank_job(void);

#endif
