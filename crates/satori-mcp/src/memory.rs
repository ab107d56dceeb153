//! How the server's process keeps its resident memory settled under load.
//!
//! glibc's allocator gives each thread that allocates while another holds an arena a new arena,
//! up to eight per core, and keeps what is freed in each for reuse. Tool calls run on
//! blocking threads, dozens at once under load, so resident memory swings by tens of MiB
//! between samples (in `bench/soak.py`'s runs, 64 clients on 2 cores, one server's anonymous
//! memory moved between 65 and 103 MiB from one minute to the next on the same work), and the
//! slope of a run says more about where its last samples fell than about a leak. Fewer arenas
//! and handing freed pages back after a burst keep it near what the work needs.

/// Bounds glibc's arenas to one per core (at least two, at most eight), unless the user
/// chose with `MALLOC_ARENA_MAX`. Called once at start, before the runtime's threads exist.
pub(crate) fn bound_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let arenas = cores.clamp(2, 8) as libc::c_int;
        // SAFETY: mallopt sets one of the allocator's tunables; it takes the allocator's own
        // lock and touches no memory of ours.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
    }
}

/// Hands memory freed by closed sessions back to the system: glibc's allocator keeps freed
/// pages of its arenas for reuse, so without this a flood of sessions leaves the process at
/// its peak size after they are gone.
pub(crate) fn return_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator's own arenas.
    unsafe {
        libc::malloc_trim(0);
    }
}
