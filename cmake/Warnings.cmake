# Warning flags shared by every meshsim target (meshsim_warnings is linked
# privately by each library, tool and test).
add_library(meshsim_warnings INTERFACE)
target_compile_options(meshsim_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion
  -Wnon-virtual-dtor -Wold-style-cast -Woverloaded-virtual -Wnull-dereference
  -Wimplicit-fallthrough)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # g++ 12 at -O3 reports maybe-uninitialized false positives from inside
  # Boost.Graph's iterators; clang and the sanitizer build still check.
  target_compile_options(meshsim_warnings INTERFACE -Wno-maybe-uninitialized)
endif()
if(MESHSIM_WERROR)
  target_compile_options(meshsim_warnings INTERFACE -Werror)
endif()
# Boost's imported targets define this (no automatic linking, an MSVC
# feature); every target defines it, so that targets with and without Boost
# see the precompiled headers alike (cmake/PrecompiledHeaders.cmake).
target_compile_definitions(meshsim_warnings INTERFACE BOOST_ALL_NO_LIB)
if(MESHSIM_SANITIZE)
  target_compile_options(meshsim_warnings INTERFACE
    -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(meshsim_warnings INTERFACE -fsanitize=address,undefined)
endif()
if(MESHSIM_TSAN)
  target_compile_options(meshsim_warnings INTERFACE -fsanitize=thread -fno-omit-frame-pointer)
  target_link_options(meshsim_warnings INTERFACE -fsanitize=thread)
endif()

# meshsim_light: code that parses, prints or tests, where compile time
# matters more than speed (the command line and the test code; every
# computation runs in the libraries, built at -O3). Release builds it at
# -O1, in about 60 % of -O3's time. Linked after meshsim_warnings: g++ 12 at
# -O1 reports a null dereference inside std::vector<std::string> that is
# not there, and (GCC bug 105651, shown once the headers are precompiled)
# a memcpy out of bounds inside std::string's operator+ that is not there
# either, so this code goes without those warnings (the libraries keep them).
add_library(meshsim_light INTERFACE)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(meshsim_light INTERFACE "$<$<CONFIG:Release>:-O1;-Wno-null-dereference;-Wno-array-bounds;-Wno-stringop-overflow>")
else()
  target_compile_options(meshsim_light INTERFACE "$<$<CONFIG:Release>:-O1>")
endif()
