# Sourced by the scripts: the CMake flags every tree they build shares.
# - Unity builds: the sources of a target compiled eight to a file, so the heavy header-only
#   libraries (CLI11, pybind11, Boost.Beast, GoogleTest) are compiled once per eight sources, not
#   once per source; the project's CMakeLists leave it off for users' own builds (a plain
#   configure compiles each file alone, and scripts/test.sh checks that too).
# - ccache, where it is installed: a rebuilt or second tree compiles only what changed.
# - Debug information as line tables (-g1) in RelWithDebInfo and Debug trees: what symbolizing
#   an allocation stack (file:line) and a sanitizer's report need, at a quarter less build time
#   than full -g (154 s against 215 s for build/ on 2 cores); a user's own configure keeps
#   CMake's -g.
GPUMEM_BUILD_FLAGS=(-DCMAKE_UNITY_BUILD=ON
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
  "-DCMAKE_CXX_FLAGS_DEBUG=-g1" "-DCMAKE_C_FLAGS_DEBUG=-g1")
if command -v ccache >/dev/null; then
  GPUMEM_BUILD_FLAGS+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
fi
