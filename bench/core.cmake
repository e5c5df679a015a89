# gpu_mem_get and gpu_mem_get_used_fast against the raw NVML call they wrap, on the simulator.
add_executable(gpumem_core_bench ${CMAKE_CURRENT_LIST_DIR}/core_bench.cpp)
target_link_libraries(gpumem_core_bench PRIVATE benchmark::benchmark ${CMAKE_DL_LIBS})
target_include_directories(gpumem_core_bench PRIVATE ${PROJECT_SOURCE_DIR}/tests)
gpumem_link_testing(gpumem_core_bench)
target_compile_definitions(gpumem_core_bench PRIVATE GPUMEM_SIM_DIR="${GPUMEM_SIM_DIR}")
add_dependencies(gpumem_core_bench gpumem_sim)
gpumem_warnings(gpumem_core_bench)
