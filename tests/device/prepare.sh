#!/usr/bin/env bash
# Run HERE (with the package registry) before tests/device/run.sh is sent to a GPU machine that
# cannot fetch anything: downloads the header-only Debian packages the build needs into .device/,
# which git ignores and the device tool carries (carry: [".device"]).
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.device/' .git/info/exclude 2>/dev/null || echo '/.device/' >>.git/info/exclude
mkdir -p .device/debs
(cd .device/debs && apt-get download libcli11-dev nlohmann-json3-dev >/dev/null)
ls .device/debs
