# The allocator of the programs that simulate: the CLI and the simulator's
# benchmarks, so that a benchmark measures what the CLI runs.
#
# A simulation allocates and frees many small vectors (task device lists,
# flow paths, per-run tables, the solver's edge lists); glibc's malloc spends
# about a tenth of a search in malloc, free and consolidation, jemalloc
# (Debian's libjemalloc-dev) much less, and with its options in
# tools/allocator_conf.cpp it backs the heap with 2 MiB pages. Optional, and
# never under a sanitizer, which brings its own allocator.
set(MESHSIM_ALLOCATOR "")
if(NOT MESHSIM_SANITIZE AND NOT MESHSIM_TSAN)
  find_library(MESHSIM_JEMALLOC NAMES jemalloc)
  if(MESHSIM_JEMALLOC)
    set(MESHSIM_ALLOCATOR ${MESHSIM_JEMALLOC})
    message(STATUS "meshsim: linking jemalloc (${MESHSIM_JEMALLOC})")
  else()
    message(STATUS "meshsim: jemalloc not found; glibc malloc (apt install libjemalloc-dev)")
  endif()
endif()

# meshsim_use_allocator(<target>...): links jemalloc and its options, when found.
function(meshsim_use_allocator)
  if(NOT MESHSIM_ALLOCATOR)
    return()
  endif()
  foreach(target IN LISTS ARGN)
    target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/tools/allocator_conf.cpp)
    target_link_libraries(${target} PRIVATE ${MESHSIM_ALLOCATOR})
  endforeach()
endfunction()
