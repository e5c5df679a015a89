# `gpumem run`'s overhead on an allocation-heavy simulated workload, as a ratio to the bare run.
# The shared counters' own per-event cost beside a bare atomic add.
add_executable(gpumem_cli_bench ${CMAKE_CURRENT_LIST_DIR}/cli/run_overhead_bench.cpp
                                ${CMAKE_CURRENT_LIST_DIR}/cli/counters_bench.cpp)
# The shared counters are a seam of libgpumem.so (gpumem/internal/run_counters.hpp).
target_link_libraries(gpumem_cli_bench PRIVATE benchmark::benchmark gpumem gpumem_internal
                                               ${CMAKE_DL_LIBS})
target_include_directories(gpumem_cli_bench PRIVATE ${PROJECT_SOURCE_DIR}/tests)
target_compile_definitions(gpumem_cli_bench PRIVATE GPUMEM_SIM_DIR="${GPUMEM_SIM_DIR}"
                                                    GPUMEM_CLI_PATH="$<TARGET_FILE:gpumem_cli>")
add_dependencies(gpumem_cli_bench gpumem_cli gpumem_inject gpumem_sim)
gpumem_warnings(gpumem_cli_bench)

# `gpumem report` and `gpumem diff` against a plain JSON parse of the same files
# (bench/report_scaling.py drives both, the floor first).
add_executable(gpumem_json_parse_floor ${CMAKE_CURRENT_LIST_DIR}/cli/json_parse_floor.cpp)
gpumem_warnings(gpumem_json_parse_floor)

# Reading a PyTorch memory snapshot of up to a million blocks: `gpumem attribution` against
# Python's pickle.load of the same file, in the same run: `cmake --build <build> --target
# bench_torch_snapshot`.
set(_torch_bench_python ${GPUMEM_PYTHON_EXECUTABLE})
if(NOT _torch_bench_python)
  set(_torch_bench_python python3)
endif()
add_custom_target(bench_torch_snapshot
  COMMAND ${_torch_bench_python} ${CMAKE_CURRENT_LIST_DIR}/torch_snapshot_read.py
          --gpumem $<TARGET_FILE:gpumem_cli>
  USES_TERMINAL
  VERBATIM)
add_dependencies(bench_torch_snapshot gpumem_cli)

# `gpumem run`'s monitor: CPU per tick at 1, 32 and 128 idle processes against the same run with
# none, in the same run (docs/peaks.md): `cmake --build <build> --target bench_run_monitor_ticks`.
add_custom_target(bench_run_monitor_ticks
  COMMAND ${_torch_bench_python} ${CMAKE_CURRENT_LIST_DIR}/run_monitor_ticks.py
          --gpumem $<TARGET_FILE:gpumem_cli> --sim-tool $<TARGET_FILE:gpumem_sim_tool>
          --sim-dir ${GPUMEM_SIM_DIR}
  USES_TERMINAL
  VERBATIM)
add_dependencies(bench_run_monitor_ticks gpumem_cli gpumem_inject gpumem_sim_tool)
