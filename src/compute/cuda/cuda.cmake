# cuda.cmake — the CUDA backend (src/compute/cuda/*.cu), included by the top
# CMakeLists only when a CUDA compiler was found. Builds sm_90 machine code
# plus compute_90 PTX (so a newer GPU can JIT it), links the CUDA runtime
# (cuBLASLt/cuBLAS are loaded at run time: cuda_blas_dl.cu), and defines
# CT_HAVE_CUDA for the library and its users.
# A CPU-only build never reads this file.
find_package(CUDAToolkit REQUIRED)
# The top level's add_compile_options are written for the C compiler (-Wshadow,
# -Werror, ...); keep them away from nvcc by limiting each to C sources.
get_target_property(ct_lib_opts cohere_transcribe COMPILE_OPTIONS)
if(ct_lib_opts)
  set(ct_c_only "")
  foreach(o ${ct_lib_opts})
    list(APPEND ct_c_only "$<$<COMPILE_LANGUAGE:C>:${o}>")
  endforeach()
  set_property(TARGET cohere_transcribe PROPERTY COMPILE_OPTIONS ${ct_c_only})
endif()
file(GLOB CT_CUDA_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/compute/cuda/*.cu)
target_sources(cohere_transcribe PRIVATE ${CT_CUDA_SOURCES})
set_source_files_properties(${CT_CUDA_SOURCES} PROPERTIES LANGUAGE CUDA)
# The gencode pair is spelled out (not CUDA_ARCHITECTURES) so that both the
# cubin and the PTX are embedded whatever CMake's default is.
set_property(TARGET cohere_transcribe PROPERTY CUDA_ARCHITECTURES OFF)
target_compile_options(cohere_transcribe PRIVATE
  $<$<COMPILE_LANGUAGE:CUDA>:-gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90
  -O3 --expt-relaxed-constexpr -Xcompiler=-Wall,-Wno-unused-parameter,-Wno-format-truncation>)
if(CT_WERROR)
  target_compile_options(cohere_transcribe PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>)
endif()
target_compile_definitions(cohere_transcribe PUBLIC CT_HAVE_CUDA)
# cuBLAS/cuBLASLt are not linked: cuda_blas_dl.cu loads them with dlopen
# when a GPU context is made, so CPU runs never map them (~880 MB of address
# space). CT_CUDA_LIBDIR is where it looks after the library search path.
target_compile_definitions(cohere_transcribe PRIVATE CT_CUDA_LIBDIR="${CUDAToolkit_LIBRARY_DIR}")
target_link_libraries(cohere_transcribe PUBLIC CUDA::cudart_static ${CMAKE_DL_LIBS})
