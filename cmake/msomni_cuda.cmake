# Optional CUDA: found -> kernels/cuda and the NCCL backend are built; not found -> CPU build only.
set(MSOMNI_HAVE_CUDA OFF)
if(ENABLE_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # sm_90 machine code plus compute_80 PTX that the driver can JIT on any newer GPU.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90-real 80-virtual)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} REQUIRED)
    find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib REQUIRED)
    add_library(nccl::nccl UNKNOWN IMPORTED)
    set_target_properties(nccl::nccl PROPERTIES
      IMPORTED_LOCATION ${NCCL_LIBRARY}
      INTERFACE_INCLUDE_DIRECTORIES ${NCCL_INCLUDE_DIR})
    set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 knows no CUDA20 flag for nvcc
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(MSOMNI_HAVE_CUDA ON)
    message(STATUS "msomni: CUDA ${CMAKE_CUDA_COMPILER_VERSION} found, architectures ${CMAKE_CUDA_ARCHITECTURES}")
  else()
    message(STATUS "msomni: nvcc not found, building the CPU-only runtime")
  endif()
else()
  message(STATUS "msomni: ENABLE_CUDA=OFF, building the CPU-only runtime")
endif()
