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
// dirty_decay_ms:-1, oversize_threshold:0: freed pages stay with the
// process, for its next allocations. By default jemalloc hands them back to
// the kernel within seconds, and an allocation of 8 MiB or more (a growing
// task array, a plan file's text, the solver's path pool) at once when
// freed, so that the next one faults in fresh pages that the kernel must
// zero: `meshsim simulate` of 100,000 random flows spent 0.14-0.85 s of
// system time on that (0.04-0.15 s with the pages kept), a search 1.4-1.8 s
// (1.1 s). The price: a process keeps what it once held (a search's peak
// resident memory about 15 % higher). MALLOC_CONF, read after this,
// overrides any of these.
extern "C" {
// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables): the name jemalloc looks up
const char* malloc_conf = "thp:always,dirty_decay_ms:-1,oversize_threshold:0";
}
