#!/usr/bin/env bash
# The .deb as a user gets it (scripts/test.sh runs this after the build): `cpack` makes it from
# the build tree, it is unpacked into a clean directory tree (dpkg -x), and its gpumem runs from
# there against the simulated GPU: `gpumem list`, and `gpumem run --mode exact`, which needs the
# package's injection library and libgpumem.so (nothing points it at the build tree).
# usage: tests/package/package_deb.sh [build-dir]
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
SIM=$BUILD/sim
WORK=$BUILD/package-deb
rm -rf "$WORK"
mkdir -p "$WORK/root"

fail() {
  echo "package_deb: $*" >&2
  exit 1
}

(cd "$WORK" && cpack --config "$BUILD/CPackConfig.cmake" -G DEB -B "$WORK" \
  -D CPACK_PACKAGING_INSTALL_PREFIX=/usr >"$WORK/cpack.log" 2>&1) ||
  { tail -n 30 "$WORK/cpack.log" >&2; fail "cpack failed (log: $WORK/cpack.log)"; }
DEB=$(ls "$WORK"/gpumem_*.deb)
dpkg-deb --info "$DEB" >"$WORK/info.txt"
dpkg-deb --contents "$DEB" >"$WORK/contents.txt"
for path in ./usr/bin/gpumem ./usr/lib/libgpumem.so.0.1.0 ./usr/lib/libgpumem.a \
  ./usr/lib/libgpumem_inject.so ./usr/include/gpumem/gpumem.hpp ./usr/include/gpumem/version.hpp \
  ./usr/lib/cmake/gpumem/gpumemConfig.cmake ./usr/lib/pkgconfig/gpumem.pc \
  ./usr/lib/systemd/system/gpumem-exporter.service \
  ./usr/share/bash-completion/completions/gpumem ./usr/share/zsh/vendor-completions/_gpumem \
  ./usr/share/fish/vendor_completions.d/gpumem.fish ./usr/share/man/man1/gpumem.1; do
  grep -q " $path" "$WORK/contents.txt" || fail "$(basename "$DEB") lacks $path"
done
dpkg -x "$DEB" "$WORK/root"
ROOT=$WORK/root
grep -q "^ExecStart=/usr/bin/gpumem serve" "$ROOT/usr/lib/systemd/system/gpumem-exporter.service" ||
  fail "the systemd unit does not run /usr/bin/gpumem"

# The completions and the man page are what the packaged command writes (nothing drifted).
for pair in "bash usr/share/bash-completion/completions/gpumem" "man usr/share/man/man1/gpumem.1"; do
  set -- $pair
  "$ROOT/usr/bin/gpumem" completion "$1" | cmp -s - "$ROOT/$2" ||
    fail "$2 is not what gpumem completion $1 writes"
done
# The unpacked gpumem loads the unpacked libgpumem.so, found through its own RUNPATH.
unset LD_LIBRARY_PATH GPUMEM_INJECT_LIBRARY
loaded=$(ldd "$ROOT/usr/bin/gpumem" | sed -n 's/^\s*libgpumem\.so\.[0-9.]* => \(\S*\) .*/\1/p')
[ -n "$loaded" ] && [ "$(realpath "$loaded")" = "$ROOT/usr/lib/libgpumem.so.0.1.0" ] ||
  fail "$ROOT/usr/bin/gpumem does not load the package's libgpumem.so (${loaded:-not found})"
# No binary of the package searches the current directory for its libraries.
python3 "$(dirname "$0")/runpath.py" "$ROOT/usr/bin/gpumem" "$ROOT"/usr/lib/libgpumem*.so* >/dev/null ||
  fail "$(python3 "$(dirname "$0")/runpath.py" "$ROOT/usr/bin/gpumem" "$ROOT"/usr/lib/libgpumem*.so*)"

export GPUMEM_NVML_LIBRARY=$SIM/libnvidia-ml.so.1 GPUMEM_CUDA_LIBRARY=$SIM/libcuda.so.1
export GPUMEM_CUPTI_LIBRARY=$SIM/libcupti.so.13 GPUMEM_SIM_STATE=$WORK/sim.state
export GPUMEM_SIM_CONFIG='{"devices":[{"name":"NVIDIA H200","total_mib":143771}]}'
"$ROOT/usr/bin/gpumem" list >"$WORK/list.txt" 2>&1 || { cat "$WORK/list.txt" >&2; fail "gpumem list failed"; }
grep -q "NVIDIA H200" "$WORK/list.txt" || { cat "$WORK/list.txt" >&2; fail "gpumem list did not list the simulated H200"; }
"$ROOT/usr/bin/gpumem" run --mode exact -- "$SIM/gpumem-sim" workload 'alloc a 64MiB; free a' \
  >"$WORK/run.txt" 2>&1 || { cat "$WORK/run.txt" >&2; fail "gpumem run --mode exact failed"; }
grep -q "measured exactly" "$WORK/run.txt" || { cat "$WORK/run.txt" >&2; fail "gpumem run did not measure exactly"; }
echo "$(basename "$DEB"): $(grep -c . "$WORK/contents.txt") entries; unpacked, gpumem list and gpumem run --mode exact work from it"
