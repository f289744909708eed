// jemalloc's start-up options, linked only with jemalloc (cmake/Allocator.cmake).
//
// thp:always: jemalloc asks the kernel for 2 MiB pages for its heap
// (madvise(MADV_HUGEPAGE); Debian's default is to give them only when asked).
// A search builds and simulates thousands of plans whose task arrays span
// hundreds of MB, each pass over them (build, schedule, run set-up) touching
// memory the allocator has handed back and taken again: with 4 KiB pages
// that is a minor fault per page. With 2 MiB pages the search's faults fall
// about sixfold, and it runs about 6 % faster. The flow solver reads its
// edge and path arrays at random on every rate change (the process peaks at
// about 130 MB with 100,000 flows in flight): bench_sim's one-GPU-per-host
// case ran 11-15 % faster with jemalloc and these pages than with glibc's
// malloc.
//
// oversize_threshold:0: an allocation of 8 MiB or more (a growing task
// array, a plan file's text, the solver's path pool) comes from the heap's
// own arenas, whose freed pages wait a few seconds for the next
// allocations, instead of from an arena that hands them back to the
// kernel at once, so that the next one faults in fresh pages for the kernel
// to zero. `meshsim simulate` of 100,000 random flows, 5 runs each way:
// 0.20 s of system time instead of 0.30 s (7.61 s against 7.68 s), for 2-4 %
// more peak memory. (Keeping every freed page, dirty_decay_ms:-1, raised a
// search's peak by a quarter and the simulation's fresh pages with it.)
// MALLOC_CONF, read after this, overrides any of these options it names.
extern "C" {
// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables): the name jemalloc looks up
const char* malloc_conf = "thp:always,oversize_threshold:0";
}
