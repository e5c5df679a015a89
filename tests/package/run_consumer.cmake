# cmake -DMODE=… -DCONSUMER=tests/consumer -DWORK=<dir> -DSIM_DIR=<sim> [-DPREFIX=<install prefix>]
#       [-DGPUMEM_SOURCE_DIR=<source tree>] [-DGENERATOR=… -DCXX=… -DLAUNCHER=… -DUNITY=ON]
#       -P run_consumer.cmake
# Builds tests/consumer as a user would (MODE: find_package, subdirectory, fetchcontent, or
# pkg-config: consumer.cpp compiled with `pkg-config --cflags --libs gpumem`), then runs what it
# built against the simulated GPU and checks the figure it prints is the simulated device's.
cmake_minimum_required(VERSION 3.22)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "failed (${status}): ${ARGN}\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

set(build ${WORK}/${MODE})
file(REMOVE_RECURSE ${build})
file(MAKE_DIRECTORY ${build})
set(programs)
if(MODE STREQUAL "pkg-config")
  set(ENV{PKG_CONFIG_PATH} "${PREFIX}/lib/pkgconfig")
  run(pkg-config --cflags --libs gpumem)
  string(STRIP "${run_output}" flags)
  separate_arguments(flags UNIX_COMMAND "${flags}")
  run(pkg-config --variable=libdir gpumem)
  string(STRIP "${run_output}" libdir)
  run(${CXX} -std=c++20 -O1 ${CONSUMER}/consumer.cpp ${flags} -Wl,-rpath,${libdir}
      -o ${build}/consumer)
  list(APPEND programs ${build}/consumer)
else()
  # No build type: no optimisation, the quickest compile of gpumem's sources (a subproject builds
  # them again).
  set(configure ${CMAKE_COMMAND} -S ${CONSUMER} -B ${build} -G ${GENERATOR}
      -DCMAKE_BUILD_TYPE= -DCMAKE_CXX_COMPILER=${CXX} -DGPUMEM_CONSUMER_MODE=${MODE})
  if(PREFIX)
    list(APPEND configure -DCMAKE_PREFIX_PATH=${PREFIX})
  endif()
  if(GPUMEM_SOURCE_DIR)
    list(APPEND configure -DGPUMEM_SOURCE_DIR=${GPUMEM_SOURCE_DIR})
  endif()
  if(LAUNCHER)
    list(APPEND configure -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
  endif()
  if(UNITY)  # as the tree that runs this test was built (scripts/build_flags.sh)
    list(APPEND configure -DCMAKE_UNITY_BUILD=ON)
  endif()
  run(${configure})
  run(${CMAKE_COMMAND} --build ${build})
  list(APPEND programs ${build}/consumer ${build}/consumer_static)
endif()

# The simulated GPU, an H200 of 143771 MiB, on a state file of this test's own.
set(ENV{GPUMEM_NVML_LIBRARY} ${SIM_DIR}/libnvidia-ml.so.1)
set(ENV{GPUMEM_CUDA_LIBRARY} ${SIM_DIR}/libcuda.so.1)
set(ENV{GPUMEM_CUPTI_LIBRARY} ${SIM_DIR}/libcupti.so.13)
set(ENV{GPUMEM_SIM_STATE} ${build}/sim.state)
set(ENV{GPUMEM_SIM_CONFIG} [[{"devices":[{"name":"NVIDIA H200","total_mib":143771,"reserved_mib":542}]}]])
foreach(program IN LISTS programs)
  run(${program})
  message(STATUS "${program}: ${run_output}")
  if(NOT run_output MATCHES "total=143771 free=143229 used=542 MB")
    message(FATAL_ERROR "${program} did not read the simulated H200: ${run_output}")
  endif()
endforeach()
