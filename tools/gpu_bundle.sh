#!/usr/bin/env bash
# gpu_bundle.sh: builds here, once, everything the GPU check runs, and packs it into one
# self-contained archive for a bare GPU machine (CUDA toolkit, NCCL and Python there; none of
# this project's Debian packages, no package registry, no network).
#
#   tools/gpu_bundle.sh [--out ARCHIVE] [--build-dir DIR] [--reuse] [--level N]
#
#   --out ARCHIVE   where the archive goes (default msomni-gpu-bundle.tar.xz; xz, which a
#                   bare machine's base image has and Python's lzma reads, packs it smaller
#                   than zstd -19)
#   --build-dir DIR the Release tree with CUDA for sm_90 and a compute_90 PTX fallback
#                   (default build-gpu-bundle; configured and built unless --reuse)
#   --reuse         pack DIR as it is, any build type (it must have CUDA on): the tree
#                   `make` built, say, for the test that checks the bundle is self-contained
#   --level N       xz level, 0-9, always with --extreme (default 9)
#
# The archive (a tar) holds one directory, msomni-gpu-bundle/:
#   bin/      msomni-run, msomni-rank, msomni-gen-dataset, msomni-health-peer (the pre-flight's
#             UCX loopback peer) and the CUDA test programs, stripped,
#             each with RUNPATH $ORIGIN/../lib
#   lib/      every shared library they load that the GPU machine does not provide: what
#             `ldd` resolves, less the names in tools/gpu_bundle_allow.txt (the C library,
#             the C++ runtime, CUDA's and NCCL's own libraries, which come from the machine)
#   lib/ucx/  UCX's transport modules (dlopened, so ldd cannot see them), and their libraries
#   configs/quickstart.toml, check.sh (tools/gpu_check.sh, which runs from the bundle),
#   allow.txt, MANIFEST (commit, build type, CUDA architectures, every file with its size)
# Exit 0 with the archive written and its size printed; 1 when a step fails (it says which)
# or when the archive is 60 MiB or more.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$PWD/msomni-gpu-bundle.tar.xz"
build="$here/build-gpu-bundle"
reuse=0
level=9
limit_bytes=$((60 * 1024 * 1024))
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out="$(realpath -m "$2")"; shift 2 ;;
    --build-dir) build="$(realpath -m "$2")"; shift 2 ;;
    --reuse) reuse=1; shift ;;
    --level) level="$2"; shift 2 ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "gpu_bundle: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if ! [[ "$level" =~ ^[0-9]$ ]]; then
  echo "gpu_bundle: --level must be 0..9 (got $level)" >&2
  exit 2
fi
for tool in patchelf xz strip ldd; do
  command -v "$tool" >/dev/null 2>&1 || { echo "gpu_bundle: needs $tool (tools/bootstrap.sh installs it)" >&2; exit 1; }
done

programs=(apps/msomni-run/msomni-run apps/msomni-rank/msomni-rank tools/dataset_gen/msomni-gen-dataset
          actors/health/msomni-health-peer tests/kernels/kernel_cuda_parity_tests tests/models/model_cuda_parity_tests tests/transport/transport_unit_tests)
targets=(msomni-run msomni-rank msomni-gen-dataset msomni-health-peer kernel_cuda_parity_tests model_cuda_parity_tests transport_unit_tests)

if [[ $reuse == 0 ]]; then
  command -v nvcc >/dev/null 2>&1 || [[ -x /usr/local/cuda/bin/nvcc ]] || { echo "gpu_bundle: no nvcc: cannot build the CUDA kernels" >&2; exit 1; }
  generator=()
  command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
  echo "gpu_bundle: building ${targets[*]} into $build (Release, sm_90 + compute_90 PTX)"
  cmake -S "$here" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DENABLE_CUDA=ON \
    "-DCMAKE_CUDA_ARCHITECTURES=90-real;90-virtual" \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache >/dev/null
  cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
fi
[[ -f "$build/CMakeCache.txt" ]] || { echo "gpu_bundle: $build is not a configured build tree" >&2; exit 1; }
grep -q '^ENABLE_CUDA:BOOL=ON' "$build/CMakeCache.txt" || { echo "gpu_bundle: $build was built without CUDA" >&2; exit 1; }
for p in "${programs[@]}"; do
  [[ -x "$build/$p" ]] || { echo "gpu_bundle: $build/$p is missing (build the targets ${targets[*]})" >&2; exit 1; }
done

stage="$(mktemp -d "${TMPDIR:-/tmp}/msomni-gpu-bundle.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
root="$stage/msomni-gpu-bundle"
mkdir -p "$root/bin" "$root/lib/ucx" "$root/configs"
allow="$here/tools/gpu_bundle_allow.txt"
allowed() {  # allowed SONAME: the GPU machine provides it
  local name="$1" pattern
  while read -r pattern; do
    [[ -z "$pattern" || "$pattern" == \#* ]] && continue
    # shellcheck disable=SC2053
    [[ "$name" == $pattern ]] && return 0
  done <"$allow"
  return 1
}
copy_deps() {  # copy_deps ELF: the libraries it loads that the machine does not provide
  local line name path
  while read -r line; do
    name="${line%% *}"
    path="$(sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p' <<<"$line")"
    [[ -z "$name" ]] && continue
    if [[ "$line" == *"not found"* ]]; then
      allowed "$name" && continue
      echo "gpu_bundle: $1 needs $name, which is not found here" >&2
      return 1
    fi
    [[ -z "$path" ]] && continue  # the vDSO and the loader
    allowed "$name" && continue
    [[ -e "$root/lib/$name" ]] && continue
    cp -L "$path" "$root/lib/$name"
  done < <(ldd "$1")
}

for p in "${programs[@]}"; do
  cp "$build/$p" "$root/bin/"
done
# UCX's transport modules: CMA (same-host copies) is what one node needs; TCP and shared
# memory live in libuct itself. The InfiniBand modules would bring the verbs stack along.
ucx_dir="$(dirname "$(ldd "$build/apps/msomni-rank/msomni-rank" | sed -n 's/.*libucs.so[^ ]* => \(\/[^ ]*\) .*/\1/p')")/ucx"
for m in "$ucx_dir"/libuct_cma.so.0; do
  [[ -e "$m" ]] && cp -L "$m" "$root/lib/ucx/"
done
for f in "$root"/bin/* "$root"/lib/ucx/*; do copy_deps "$f"; done
# The libraries' own dependencies are in ldd's answers above (it lists them transitively).
strip --strip-unneeded "$root"/bin/* "$root"/lib/*.so* "$root"/lib/ucx/*.so* 2>/dev/null || true
for f in "$root"/bin/*; do patchelf --set-rpath '$ORIGIN/../lib' "$f"; done
for f in "$root"/lib/*.so*; do patchelf --set-rpath '$ORIGIN' "$f"; done
for f in "$root"/lib/ucx/*.so*; do patchelf --set-rpath '$ORIGIN/..' "$f"; done

cp "$here/configs/quickstart.toml" "$root/configs/"
cp "$here/tools/gpu_check.sh" "$root/check.sh"
cp "$allow" "$root/allow.txt"
{
  echo "msomni GPU bundle"
  echo "commit: $(git -C "$here" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$here" diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "build: $(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt"), CUDA architectures: $(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$build/CMakeCache.txt")"
  echo "made: $(date -u +%FT%TZ) on $(hostname)"
  echo "files:"
  (cd "$root" && find . -type f -printf '  %P %s\n' | sort)
} >"$root/MANIFEST"

tar -C "$stage" -cf - msomni-gpu-bundle | xz -"$level"e -T0 -c >"$out"
size="$(stat -c %s "$out")"
echo "gpu_bundle: $out: $((size / 1024 / 1024)) MiB ($size bytes; $(find "$root" -type f | wc -l) files, $(( $(du -sb "$root" | cut -f1) / 1024 / 1024 )) MiB unpacked)"
if (( size >= limit_bytes )); then
  echo "gpu_bundle: the archive is not under 60 MiB" >&2
  exit 1
fi
