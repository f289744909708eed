# Optional CUDA toolkit (runtime/ only). MESHSIM_CUDA=AUTO uses it when found,
# ON requires it, OFF ignores it. The CUDA runtime is linked statically so the
# binaries need nothing on a GPU machine but the driver (DESIGN.md §7).
set(MESHSIM_HAVE_CUDA OFF)
if(NOT MESHSIM_CUDA STREQUAL "OFF")
  if(NOT DEFINED CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND AND TARGET CUDA::cudart_static)
    set(MESHSIM_HAVE_CUDA ON)
    message(STATUS "meshsim: CUDA ${CUDAToolkit_VERSION} at ${CUDAToolkit_LIBRARY_ROOT}")
  elseif(MESHSIM_CUDA STREQUAL "ON")
    message(FATAL_ERROR "MESHSIM_CUDA=ON but no CUDA toolkit was found (set CUDAToolkit_ROOT)")
  else()
    message(STATUS "meshsim: no CUDA toolkit found; building without the CUDA backend")
  endif()
endif()
