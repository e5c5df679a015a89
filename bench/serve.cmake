# `gpumem serve`: scrape latency on 8 simulated GPUs with 64 processes (against the help page,
# which collects nothing, as the baseline) and the exporter's own CPU use at its default interval
# (against an exporter sampling 100 times less often). docs/serving.md has the commands and figures.
add_executable(gpumem_serve_bench ${CMAKE_CURRENT_LIST_DIR}/serve/serve_bench.cpp)
target_link_libraries(gpumem_serve_bench PRIVATE gpumem benchmark::benchmark)
target_include_directories(gpumem_serve_bench PRIVATE ${PROJECT_SOURCE_DIR}/tests)
target_compile_definitions(gpumem_serve_bench PRIVATE GPUMEM_SIM_DIR="${GPUMEM_SIM_DIR}"
                                                      GPUMEM_SERVE_EXECUTABLE="$<TARGET_FILE:gpumem_cli>")
add_dependencies(gpumem_serve_bench gpumem_cli gpumem_sim)
gpumem_warnings(gpumem_serve_bench)

# The reliability suite's latency bars (tests/serve/reliability_test.py --latency): each attack's
# p99 against its unattacked twin's, judged here and not in ctest, since a loaded machine sets a
# p99 as much as the exporter does. Run it on a quiet machine:
#   cmake --build build --target bench_serve_reliability
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_custom_target(bench_serve_reliability
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/serve/reliability_test.py --latency
          $<TARGET_FILE:gpumem_cli> ${GPUMEM_SIM_DIR}
  DEPENDS gpumem_cli gpumem_sim
  USES_TERMINAL)
