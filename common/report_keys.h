/* report_keys.h: every key of a report's objects, once. The shim's writer
 * (shim/reports/report_json.c) writes them and the command's reader
 * (report/load.c) reads them through RK(key), which names this table's entry,
 * so neither side spells a key of its own; a test checks that every key is
 * in docs/report-format.md, that every key a report holds is here, and
 * that neither side writes a key as a literal.
 *
 * X(key, type, where): the key as the file spells it (its C name too);
 * its type ("u64", "int", "real", "bool", "string", "array", "object", "or
 * null" where it may be null; two separated by ";" where it differs by
 * object); the objects that have it. The kinds' names, the PyTorch event
 * names, device numbers and site ids are data used as keys, not keys of
 * the format: they come from their own tables. */
#ifndef GPULEAK_REPORT_KEYS_H
#define GPULEAK_REPORT_KEYS_H

#define REPORT_KEYS(X) \
    X(format, "string", "report") \
    X(version, "int", "report, tool (string)") \
    X(tool, "object", "report") \
    X(name, "string", "tool, holder, composition owner") \
    X(process, "object", "report") \
    X(pid, "int", "process") \
    X(host, "string", "process") \
    X(rank, "int or null", "process") \
    X(local_rank, "int or null", "process") \
    X(job, "string or null", "process") \
    X(argv, "array", "process") \
    X(start_time_ns, "u64", "process (read when present)") \
    X(end_time_ns, "u64", "process") \
    X(python, "string or null; bool", "process (the interpreter's version); origin") \
    X(status, "object", "report") \
    X(moment, "string", "status") \
    X(complete, "bool", "status") \
    X(tracking, "string", "status") \
    X(reason, "string or null", "status") \
    X(signal, "int or null", "status") \
    X(locks_skipped, "u64", "status") \
    X(stacks_dropped, "u64", "status") \
    X(growth_sites_unfollowed, "u64", "status") \
    X(growth_samples, "u64", "status") \
    X(growth_judged, "bool", "status") \
    X(totals, "object", "report") \
    X(allocations, "u64", "totals, kind and device totals, site, holder") \
    X(frees, "u64", "totals, kind and device totals, site") \
    X(failed_allocations, "u64", "totals, kind and device totals") \
    X(unknown_frees, "u64", "totals") \
    X(bytes_allocated, "u64", "totals, kind and device totals") \
    X(live_bytes, "u64", "totals, kind and device totals, site, oom") \
    X(peak_bytes, "u64", "totals, kind and device totals") \
    X(torch_reserved_bytes, "u64", "oom (PyTorch's own)") \
    X(torch_allocated_bytes, "u64", "oom (PyTorch's own)") \
    X(peak_time_ns, "u64", "totals") \
    X(leaked_bytes, "u64", "totals, kind and device totals") \
    X(leaked_allocations, "u64", "totals, kind and device totals") \
    X(kept_bytes, "u64", "totals") \
    X(kept_allocations, "u64", "totals") \
    X(reachable_bytes, "u64", "totals") \
    X(reachable_allocations, "u64", "totals") \
    X(teardown_leaked_bytes, "u64", "totals, kind and device totals") \
    X(teardown_leaked_allocations, "u64", "totals, kind and device totals") \
    X(maps, "u64", "totals") \
    X(unmaps, "u64", "totals") \
    X(sites, "u64; array", "totals (how many); report, peak, held_at_finish, oom (site entries)") \
    X(stacks, "u64; object", "totals (how many); report (by site id)") \
    X(shim_bytes, "u64", "totals") \
    X(shim_time_ns, "u64", "totals (GPULEAK_SELF_TIME)") \
    X(shim_timed_calls, "u64", "totals (GPULEAK_SELF_TIME)") \
    X(shim_clock_read_ns, "u64", "totals (GPULEAK_SELF_TIME)") \
    X(shim_captures, "u64", "totals (GPULEAK_SELF_TIME)") \
    X(shim_native_stack_ns, "u64", "totals (GPULEAK_SELF_TIME)") \
    X(shim_python_frames_ns, "u64", "totals (GPULEAK_SELF_TIME)") \
    X(shim_intern_ns, "u64", "totals (GPULEAK_SELF_TIME)") \
    X(shim_native_frames, "u64", "totals (GPULEAK_SELF_TIME)") \
    X(shim_unwound_frames, "u64", "totals (GPULEAK_SELF_TIME)") \
    X(shim_reused_frames, "u64", "totals (GPULEAK_SELF_TIME)") \
    X(shim_trusted_captures, "u64", "totals (GPULEAK_SELF_TIME)") \
    X(kinds, "object", "report (totals by kind); timeline point (bytes by kind)") \
    X(devices, "array; object", "report (totals by device); timeline point (bytes by device)") \
    X(device, "int", "device totals, site, oom") \
    X(leaks, "array", "report") \
    X(kept_by_libraries, "array", "report") \
    X(reachable_at_exit, "array", "report") \
    X(teardown_leaks, "array", "report") \
    X(failures, "array", "report") \
    X(growth, "array", "report") \
    X(site, "u64", "site, oom, oom site") \
    X(kind, "string", "site, oom, oom site") \
    X(framework, "string", "site, oom, oom site (tensor sites only)") \
    X(bytes, "u64", "site, holder, peak, oom, oom site, timeline point, composition part and owner") \
    X(count, "u64", "failure site, oom") \
    X(result, "int", "failure site") \
    X(teardown, "string or null", "teardown site") \
    X(grew, "bool", "held site") \
    X(bytes_per_second, "real", "growth site") \
    X(bytes_per_1k_allocations, "real", "growth site") \
    X(steadiness, "real", "growth site") \
    X(trend, "real", "growth site") \
    X(baseline_bytes, "u64", "growth site") \
    X(high_bytes, "u64", "growth site") \
    X(total_allocations, "u64", "site") \
    X(peak_live_bytes, "u64", "site") \
    X(origin, "object or null", "site") \
    X(owner, "string or null", "site, holder") \
    X(function, "string or null", "frame, python frame, origin, via, caller") \
    X(file, "string or null", "frame, python frame, origin, via, caller, holder") \
    X(line, "int or null", "frame, python frame, origin, via, caller") \
    X(module, "string or null", "frame, origin, via, caller") \
    X(offset, "string", "frame, origin") \
    X(address, "string", "frame") \
    X(inlined, "bool", "frame") \
    X(library, "bool", "origin") \
    X(via, "object", "origin") \
    X(callers, "array", "origin") \
    X(held_by, "array", "site") \
    X(held_by_more, "u64", "site") \
    X(role, "string", "holder, composition part") \
    X(part, "string", "holder") \
    X(composition, "object", "held_at_finish, oom, peak, report (on request)") \
    X(parts, "array", "composition") \
    X(by, "array", "composition part") \
    X(inferred, "bool", "composition (the peak's)") \
    X(type, "string", "holder") \
    X(path, "string", "holder") \
    X(graph, "bool", "holder") \
    X(timeline, "object", "report") \
    X(start_ns, "u64", "timeline") \
    X(interval_ns, "u64", "timeline") \
    X(points, "array", "timeline") \
    X(t_ns, "u64", "timeline point, mark") \
    X(max_bytes, "u64", "timeline point") \
    X(pool_reserved_bytes, "u64", "timeline point") \
    X(marks, "array", "timeline") \
    X(marks_dropped, "u64", "timeline") \
    X(peak, "object", "report") \
    X(time_ns, "u64", "peak, held_at_finish, oom") \
    X(sites_at, "string", "peak") \
    X(sites_at_bytes, "u64", "peak") \
    X(sites_at_time_ns, "u64", "peak") \
    X(held_at_finish, "object or null", "report") \
    X(gpu_bytes, "u64", "held_at_finish, composition") \
    X(tensor_bytes, "u64", "held_at_finish") \
    X(holders_search, "object", "held_at_finish, oom, report (on request)") \
    X(objects, "u64", "holders_search") \
    X(seconds, "real", "holders_search") \
    X(ended, "string", "holders_search") \
    X(named_allocations, "u64", "holders_search") \
    X(named_bytes, "u64", "holders_search") \
    X(python_layout, "object or null", "report") \
    X(stdlib, "array", "python_layout") \
    X(packages, "array", "python_layout") \
    X(oom, "object or null", "report") \
    X(frames, "array", "report") \
    X(python_frames, "array", "report") \
    X(stack, "array", "stack") \
    X(python_stack, "array", "stack") \
    X(torch_allocator, "object", "report") \
    X(mode, "string", "torch_allocator") \
    X(PYTORCH_CUDA_ALLOC_CONF, "string or null", "torch_allocator") \
    X(tensors, "string", "torch_allocator") \
    X(events, "object", "torch_allocator") \
    X(reserve_bytes, "u64", "torch_allocator") \
    X(frameworks, "object", "report") \
    X(seen, "string", "frameworks entry") \
    X(live_arrays, "u64", "frameworks entry") \
    X(from_snapshots, "u64", "frameworks entry") \
    X(snapshots, "u64", "frameworks entry") \
    X(arrays_seen_one_by_one, "u64", "frameworks entry")

#define REPORT_KEY_ENUM(key, type, where) REPORT_KEY_##key,
enum report_key { REPORT_KEYS(REPORT_KEY_ENUM) REPORT_KEY_COUNT };
#undef REPORT_KEY_ENUM

/* The key's spelling in the file. */
static inline const char *report_key(enum report_key key)
{
#define REPORT_KEY_NAME(key, type, where) #key,
    static const char *const names[REPORT_KEY_COUNT] = { REPORT_KEYS(REPORT_KEY_NAME) };
#undef REPORT_KEY_NAME
    return names[key];
}

/* RK(peak_bytes) is "peak_bytes", through the table: a key not in it does
 * not compile. */
#define RK(key) report_key(REPORT_KEY_##key)

#endif
