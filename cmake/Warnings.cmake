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
if(MESHSIM_SANITIZE)
  target_compile_options(meshsim_warnings INTERFACE
    -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(meshsim_warnings INTERFACE -fsanitize=address,undefined)
endif()
if(MESHSIM_TSAN)
  target_compile_options(meshsim_warnings INTERFACE -fsanitize=thread -fno-omit-frame-pointer)
  target_link_options(meshsim_warnings INTERFACE -fsanitize=thread)
endif()
