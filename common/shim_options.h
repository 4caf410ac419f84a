/* shim_options.h: the variables libgpuleak.so reads, one row each, for
 * the shim's parser and the command's manual page alike. */
#ifndef GPULEAK_SHIM_OPTIONS_H
#define GPULEAK_SHIM_OPTIONS_H

/* Every GPULEAK_* variable, declared once: each row is a field of the
 * shim's config_t (shim/base/config.h), a row of its parser, and an entry
 * of the manual page's ENVIRONMENT (cli/help.c); the README's list is
 * checked against it. Kinds:
 *   INT(field, variable, default, min, max, help): a whole number in
 *       [min, max] (0 to 1 for a switch)
 *   TEXT(field, variable, default, help): a string (an empty one keeps a
 *       non-empty default)
 *   WORD(field, variable, default, words, help): one of words (space
 *       separated); the field holds its index there
 *   SIGNAL(field, variable, default, help): a signal a report-and-run-on
 *       handler may take (SIGUSR1, SIGUSR2, a real-time one), 0 for none */
#define SHIM_OPTIONS(INT, TEXT, WORD, SIGNAL)                                                    \
    TEXT(output, "GPULEAK_OUTPUT", "./gpuleak-%p.json",                                            \
         "Report path; %p is the pid, %h the host name, %r the rank, %l the local rank (from "    \
         "torchrun's, Slurm's, Open MPI's or PMI's variables, digits only), %j the job id "       \
         "(Slurm's, PBS's, LSF's or torchrun's). Keep %p for a program of several processes: "    \
         "one path keeps only the last report.")                                                   \
    INT(stack_depth, "GPULEAK_STACK_DEPTH", 64, 0, 256,                                            \
        "Native frames recorded per allocation; 0 records no stacks.")                             \
    INT(python_frames, "GPULEAK_PYTHON", 1, 0, 1,                                                  \
        "Record the Python frames of the allocating thread (1) or not (0).")                       \
    INT(python_depth, "GPULEAK_PYTHON_DEPTH", 32, 1, 256, "Python frames recorded per allocation.") \
    INT(summary, "GPULEAK_SUMMARY", 1, 0, 1,                                                       \
        "Print the leak summary on stderr at exit (1) or not (0).")                                \
    INT(summary_sites, "GPULEAK_SUMMARY_SITES", 5, 0, 1000, "Leaking sites shown in the exit summary.") \
    INT(summary_frames, "GPULEAK_SUMMARY_FRAMES", 6, 1, 256, "Frames shown per site in the exit summary.") \
    INT(enabled, "GPULEAK_ENABLE", 1, 0, 1, "0 forwards every call untouched and writes no report.") \
    INT(redact_argv, "GPULEAK_REDACT_ARGV", 0, 0, 1,                                               \
        "1 keeps the command line out of the report (argv[0] only).")                              \
    INT(flush_interval_s, "GPULEAK_FLUSH_INTERVAL", 60, 0, 86400,                                  \
        "Seconds between snapshot reports, so a SIGKILL loses at most one; 0 turns them off.")     \
    INT(holders_ms, "GPULEAK_HOLDERS_MS", 1000, 0, 60000,                                          \
        "Milliseconds a Python program may spend at its exit naming the objects that hold its "    \
        "GPU memory; 0 skips it.")                                                                 \
    SIGNAL(dump_signal, "GPULEAK_DUMP_SIGNAL", 12,                                                 \
           "Signal that writes a report now, beside the report's path as NAME.request-N.json, "    \
           "and lets the program run on (12 is SIGUSR2); "                                          \
           "0 turns it off; never taken when the program has its own handler; only SIGUSR1 "       \
           "(10), SIGUSR2 (12) or a real-time signal (34 to 64) is taken.")                        \
    INT(fast_unwind, "GPULEAK_FAST_UNWIND", 1, 0, 1,                                               \
        "1 steps native frames by each address's cached unwind rule, asking libunwind "            \
        "only where a frame needs more; 0 always asks libunwind.")                                 \
    INT(self_time, "GPULEAK_SELF_TIME", 0, 0, 1,                                                   \
        "1 times the shim's own work in each call (four clock reads a call) and reports it.")      \
    WORD(torch_allocator, "GPULEAK_TORCH_ALLOCATOR", "native", "native async",                     \
         "native leaves PyTorch's allocator as the program set it and follows its tensors "        \
         "through the caching allocator's own events; async sets "                                 \
         "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync when unset, which changes the "          \
         "program (its speed, fragmentation and peak; CUDA graph trees fail).")                    \
    TEXT(origin_skip, "GPULEAK_ORIGIN_SKIP", "",                                                   \
         "Extra globs, colon-separated, for frames that are never a site's origin; "               \
         "a leading ! keeps a frame instead (docs/origin-rules.md).")                              \
    WORD(origin_rules, "GPULEAK_ORIGIN_RULES", "default", "default none",                          \
         "none drops the built-in origin rules, keeping only GPULEAK_ORIGIN_SKIP.")                \
    INT(no_libdw, "GPULEAK_NO_LIBDW", 0, 0, 1,                                                     \
        "1 symbolizes without libdw (names from the files' symbol tables, no source lines), "      \
        "as on a machine without elfutils.")                                                       \
    TEXT(prometheus_dir, "GPULEAK_PROMETHEUS_DIR", "",                                             \
         "A folder node_exporter's textfile collector reads: live, peak and PyTorch-reserved "     \
         "bytes, allocations and the growth found so far are written there as "                   \
         "gpuleak-HOST-PID.prom every GPULEAK_PROMETHEUS_INTERVAL seconds, and removed at exit.") \
    INT(prometheus_interval_s, "GPULEAK_PROMETHEUS_INTERVAL", 15, 1, 3600,                         \
        "Seconds between two writes of the Prometheus metrics.")                                   \
    INT(report_temporary, "GPULEAK_REPORT_TEMPORARY", 0, 0, 1,                                     \
        "Set by gpuleak run when the report goes to a folder it removes once judged: the exit "    \
        "summary names no path that is about to go.")

#endif
