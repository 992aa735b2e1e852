#!/bin/sh
# gpu-bundle.sh: build exactly what a GPU machine's check run needs, strip it,
# and gather it with the shared libraries it loads into one folder.
#
#   build-aux/gpu-bundle.sh [BUILD_DIR] [BUNDLE_DIR]    (defaults: build-gpu, gpu-bundle)
#
# The GPU machine has the NVIDIA driver but none of this project's Debian
# libraries, nothing can be installed there, and at most 64 MiB travels to
# it. So the bundle holds the release binaries built for Hopper only
# (-Dgpu_arch=90), and every shared library they load apart from the C
# library's own (libc, libm, ... come from the machine, newer than ours) and
# the driver (libcuda.so.1), nor the C++ runtime (libstdc++, libgcc_s: every
# CUDA machine has them, and ours would need a C library as new as ours).
# The folder is packed into gpu-bundle.tar.xz (xz -9e: the programs share
# most of their code, and a 64 MiB dictionary sees all of them; about 7 MB),
# the one path to take along; build-aux/gpu-check.sh unpacks and runs it
# from the repository root, with the test data of the tree. What travels is
# the tracked tree (50 MiB, mostly tests/data) and the archive, within the
# device's 64 MiB: the script fails when the two pass 63 MiB (a margin for
# untracked files).
set -eu

build=${1:-build-gpu}
bundle=${2:-gpu-bundle}
archive=$bundle.tar.xz
limit_mib=63

# The GPU tests of docs/gpu.md, their benchmark programs, and the CLI.
binaries="
src/cli/tensafe-cli
tests/he/test-he-cuda-kernels
tests/he/test-he-gpu-helora
tests/he/bench-cuda-kernels
tests/engine/test-engine-cuda-matvec
tests/engine/test-engine-cuda-ops
tests/engine/test-engine-forward-cuda
tests/engine/test-engine-forward-quant-cuda
tests/engine/test-engine-gpu-session
tests/engine/bench-cuda-matvec
tests/engine/bench-cuda-ops
tests/helora/test-helora-backend
tests/bench/test-gpu-probe
"

if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" -Dgui=disabled -Dgpu_arch=90 --buildtype=release
fi
grep -q "gpu_arch.*: 90" "$build/meson-logs/meson-log.txt" 2>/dev/null ||
  echo "gpu-bundle: note: $build was not set up with -Dgpu_arch=90 alone" >&2
# shellcheck disable=SC2086 # one target per word
ninja -C "$build" $binaries

rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib"
for b in $binaries; do
  cp "$build/$b" "$bundle/bin/"
  strip --strip-unneeded "$bundle/bin/$(basename "$b")"
done

# The C library's own files and the driver come from the GPU machine.
is_system_lib() {
  case "$1" in
    ld-linux*|libc.so*|libm.so*|libmvec.so*|libpthread.so*|libdl.so*|librt.so*|\
    libresolv.so*|libutil.so*|libanl.so*|libnss_*|libcuda.so*|linux-vdso*|\
    libstdc++.so*|libgcc_s.so*) return 0 ;;
  esac
  return 1
}
for b in "$bundle"/bin/*; do
  ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r name path; do
  is_system_lib "$name" && continue
  cp -L "$path" "$bundle/lib/$name"
done
strip --strip-unneeded "$bundle"/lib/* 2>/dev/null || true

tar -c -C "$bundle" . | xz -9e -T1 >"$archive"
tree=$(git ls-files -z | xargs -0 stat -c %s | awk '{ s += $1 } END { print s }')
packed=$(stat -c %s "$archive")
mib() { echo "$(($1 / 1048576)) MiB"; }
echo "gpu-bundle: $(ls "$bundle/bin" | wc -l) programs, $(ls "$bundle/lib" | wc -l) libraries;" \
  "$archive $(mib "$packed") + tracked tree $(mib "$tree")"
if [ $((tree + packed)) -gt $((limit_mib * 1048576)) ]; then
  echo "gpu-bundle: over $limit_mib MiB together: too large to travel" >&2
  exit 1
fi
# The path to take along besides the tracked tree.
echo "$archive"
