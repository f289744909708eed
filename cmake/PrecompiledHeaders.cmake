# Precompiled headers: the third-party and standard headers that nearly
# every translation unit parses (nlohmann/json, {fmt}, Boost.Graph through
# topology/topology.h, the standard containers and algorithms). Parsing
# them is most of a file's compile time, so they are compiled once and the
# files load the result: the libraries share one copy, the test binaries
# another, the command line its own (meshsim_share_pch below). They ride on
# meshsim_warnings, which every library, tool and test links; tests add
# Catch2 (tests/CMakeLists.txt) and the command line adds CLI11
# (tools/CMakeLists.txt). Files still include what they use: the layering
# check reads the #include lines, not this.
# MESHSIM_PCH=OFF turns them off (to check that every file includes what
# it needs).
option(MESHSIM_PCH "Precompile the common headers" ON)
if(MESHSIM_PCH)
  target_precompile_headers(meshsim_warnings INTERFACE
    "$<$<COMPILE_LANGUAGE:CXX>:<nlohmann/json.hpp>>"
    "$<$<COMPILE_LANGUAGE:CXX>:<fmt/format.h>>"
    "$<$<COMPILE_LANGUAGE:CXX>:<fmt/ranges.h>>"
    "$<$<COMPILE_LANGUAGE:CXX>:<boost/graph/adjacency_list.hpp>>"
    "$<$<COMPILE_LANGUAGE:CXX>:<algorithm>>"
    "$<$<COMPILE_LANGUAGE:CXX>:<functional>>"
    "$<$<COMPILE_LANGUAGE:CXX>:<map>>"
    "$<$<COMPILE_LANGUAGE:CXX>:<memory>>"
    "$<$<COMPILE_LANGUAGE:CXX>:<optional>>"
    "$<$<COMPILE_LANGUAGE:CXX>:<ranges>>"
    "$<$<COMPILE_LANGUAGE:CXX>:<set>>"
    "$<$<COMPILE_LANGUAGE:CXX>:<string>>"
    "$<$<COMPILE_LANGUAGE:CXX>:<string_view>>"
    "$<$<COMPILE_LANGUAGE:CXX>:<unordered_map>>"
    "$<$<COMPILE_LANGUAGE:CXX>:<vector>>")
endif()

# meshsim_pch(TARGET HEADER...): precompiles more headers for one target
# (C++ files only).
function(meshsim_pch target)
  if(NOT MESHSIM_PCH)
    return()
  endif()
  foreach(h ${ARGN})
    target_precompile_headers(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${h}>")
  endforeach()
endfunction()

# meshsim_share_pch(DONOR TARGET...): the targets load DONOR's precompiled
# headers instead of compiling their own, which took a quarter of a release
# build's compile time (28 copies of nearly the same headers). They must be
# compiled with DONOR's flags as far as the headers see them: the same
# optimisation and sanitizer options and the same macros the headers test
# (g++ refuses a header compiled otherwise, -Winvalid-pch, an error with
# -Werror). Macros only meshsim's own code tests (MESHSIM_HAVE_CUDA,
# MESHSIM_SOURCE_DIR) may differ.
function(meshsim_share_pch donor)
  if(NOT MESHSIM_PCH)
    return()
  endif()
  foreach(t ${ARGN})
    target_precompile_headers(${t} REUSE_FROM ${donor})
  endforeach()
endfunction()

# meshsim_no_pch(TARGET...): single-file targets, where compiling the
# headers apart saves nothing.
function(meshsim_no_pch)
  set_target_properties(${ARGN} PROPERTIES DISABLE_PRECOMPILE_HEADERS ON)
endfunction()
