# The simulated driver's own costs: what a CUPTI subscriber adds to an allocation.
add_executable(gpumem_sim_bench ${CMAKE_CURRENT_LIST_DIR}/sim_bench.cpp)
target_link_libraries(gpumem_sim_bench PRIVATE benchmark::benchmark ${CMAKE_DL_LIBS})
target_include_directories(gpumem_sim_bench PRIVATE ${PROJECT_SOURCE_DIR}/tests)
target_link_libraries(gpumem_sim_bench PRIVATE gpumem_testing)  # src/driver/abi only
target_compile_definitions(gpumem_sim_bench PRIVATE GPUMEM_SIM_DIR="${GPUMEM_SIM_DIR}")
add_dependencies(gpumem_sim_bench gpumem_sim)
gpumem_warnings(gpumem_sim_bench)
