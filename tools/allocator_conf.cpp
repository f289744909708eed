// jemalloc's start-up options, linked only with jemalloc (tools/CMakeLists.txt).
//
// thp:always: jemalloc asks the kernel for 2 MiB pages for its heap
// (madvise(MADV_HUGEPAGE); Debian's default is to give them only when asked).
// A search builds and simulates thousands of plans whose task arrays span
// hundreds of MB, each pass over them (build, schedule, run set-up) touching
// memory the allocator has handed back and taken again: with 4 KiB pages
// that is a minor fault per page. With 2 MiB pages the search's faults fall
// about sixfold, and it runs about 6 % faster. MALLOC_CONF, read after
// this, overrides it.
extern "C" {
// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables): the name jemalloc looks up
const char* malloc_conf = "thp:always";
}
