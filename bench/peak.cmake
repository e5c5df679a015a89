# Peak engine benchmarks (issue #3). Each prints gpumem's figure beside a baseline measured in the
# same run; docs/peaks.md has the commands and the numbers.

# Per-event cost against the number of live counters, thread scaling, and start()+stop().
add_executable(gpumem_bench_peak ${CMAKE_CURRENT_LIST_DIR}/peak_events.cpp)
target_link_libraries(gpumem_bench_peak PRIVATE benchmark::benchmark)
target_include_directories(gpumem_bench_peak PRIVATE ${PROJECT_SOURCE_DIR}/tests)
gpumem_link_testing(gpumem_bench_peak)
target_compile_definitions(gpumem_bench_peak PRIVATE GPUMEM_SIM_DIR="${GPUMEM_SIM_DIR}")
add_dependencies(gpumem_bench_peak gpumem_sim)
gpumem_warnings(gpumem_bench_peak)

# A process that makes allocation spikes on the simulated GPU when told to (stdin: "BYTES US").
add_executable(gpumem_bench_spiker ${CMAKE_CURRENT_LIST_DIR}/peak_spiker.cpp)
target_link_libraries(gpumem_bench_spiker PRIVATE gpumem)
gpumem_warnings(gpumem_bench_spiker)

# Spike capture of the sampled source vs the seed's Python thread, and the sampler's CPU cost.
add_executable(gpumem_bench_spikes ${CMAKE_CURRENT_LIST_DIR}/peak_spikes.cpp)
gpumem_link_testing(gpumem_bench_spikes)
target_compile_definitions(gpumem_bench_spikes PRIVATE
  GPUMEM_SIM_DIR="${GPUMEM_SIM_DIR}"
  GPUMEM_SPIKER="$<TARGET_FILE:gpumem_bench_spiker>"
  GPUMEM_SEED_SAMPLER="${CMAKE_CURRENT_LIST_DIR}/seed_sampler.py")
add_dependencies(gpumem_bench_spikes gpumem_sim gpumem_bench_spiker)
gpumem_warnings(gpumem_bench_spikes)

# The block map under random churn at 1k … 1M live blocks against a random-access floor in the
# same run, and its memory before and after the blocks are freed (issue 32).
add_executable(gpumem_bench_block_map ${CMAKE_CURRENT_LIST_DIR}/peak_block_map.cpp)
target_link_libraries(gpumem_bench_block_map PRIVATE benchmark::benchmark)
gpumem_link_testing(gpumem_bench_block_map)
gpumem_warnings(gpumem_bench_block_map)

# An allocation or free under `gpumem run` against a minimal exact tracker and no tracker, in
# paired rounds through the simulated CUDA + CUPTI (issue 32).
add_executable(gpumem_bench_run_events ${CMAKE_CURRENT_LIST_DIR}/run_event_cost.cpp)
target_link_libraries(gpumem_bench_run_events PRIVATE benchmark::benchmark)
gpumem_link_testing(gpumem_bench_run_events)
target_compile_definitions(gpumem_bench_run_events PRIVATE GPUMEM_SIM_DIR="${GPUMEM_SIM_DIR}")
add_dependencies(gpumem_bench_run_events gpumem_sim)
gpumem_warnings(gpumem_bench_run_events)

# The same minimal tracker as a CUDA injection library, and the process-level comparison that
# loads it beside `gpumem run` (bench/run_event_cost_process.py, run by hand).
add_library(gpumem_bench_minimal_inject MODULE ${CMAKE_CURRENT_LIST_DIR}/minimal_tracker_inject.cpp)
target_include_directories(gpumem_bench_minimal_inject PRIVATE ${PROJECT_SOURCE_DIR}/src)  # abi
target_link_libraries(gpumem_bench_minimal_inject PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
gpumem_warnings(gpumem_bench_minimal_inject)
