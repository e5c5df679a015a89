# Attribution's cost (issue #13): an allocation event with attribution off and on (a 32-frame
# native stack), the two unwinders, symbolization per 10,000 unique frames, and the memory of
# 1M live blocks with snapshots; docs/peaks.md has the commands and the numbers.
add_executable(gpumem_bench_attribution ${CMAKE_CURRENT_LIST_DIR}/attribution_bench.cpp)
target_link_libraries(gpumem_bench_attribution PRIVATE benchmark::benchmark)
gpumem_link_testing(gpumem_bench_attribution)
target_compile_options(gpumem_bench_attribution PRIVATE -fno-omit-frame-pointer
                                                        -fno-optimize-sibling-calls)
target_compile_definitions(gpumem_bench_attribution PRIVATE GPUMEM_SIM_DIR="${GPUMEM_SIM_DIR}")
add_dependencies(gpumem_bench_attribution gpumem_sim)
gpumem_warnings(gpumem_bench_attribution)
