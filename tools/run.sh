#!/usr/bin/env bash
# One entry point on a fresh Debian 12 machine: installs what is missing, builds, runs.
#
#   tools/run.sh demo              build (Release) and run `spillway demo`
#   tools/run.sh test              build (Release) and run the whole test suite
#   tools/run.sh test --sanitize   the same under AddressSanitizer + UBSan
#   tools/run.sh build [--sanitize]   only build
#
# Idempotent: a second run installs nothing and rebuilds only what changed (ccache).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
packages=(cmake ninja-build g++ pkg-config ccache
          libcaf-dev liburing-dev libtomlplusplus-dev doctest-dev libibverbs-dev
          libcli11-dev libspdlog-dev libisal-dev libcpp-httplib-dev fio
          python3 python3-matplotlib python3-prometheus-client
          libfuse3-dev fuse3
          python3-dev pybind11-dev python3-pybind11 python3-pytest python3-torch python3-numpy)

install_missing() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return
  echo "installing: ${missing[*]}" >&2
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
}

build() {  # $1 = build dir, then extra cmake arguments
  local dir=$1
  shift
  # Paths under the checkout hash as relative ones, so clones and worktrees share ccache.
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
  if [ ! -f "$dir/build.ninja" ]; then
    cmake -S "$root" -B "$dir" -G Ninja "$@" >/dev/null
  fi
  cmake --build "$dir"
}

command=${1:-}
variant=${2:-}
case "$variant" in
  "") dir="$root/build/release"; flags=(-DCMAKE_BUILD_TYPE=Release) ;;
  --sanitize) dir="$root/build/sanitize"
              flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPILLWAY_SANITIZE=ON) ;;
  *) echo "unknown option: $variant (only --sanitize)" >&2; exit 2 ;;
esac

case "$command" in
  demo)
    install_missing
    build "$dir" "${flags[@]}"
    exec "$dir/spillway" demo ;;
  test)
    install_missing
    build "$dir" "${flags[@]}"
    # Tests run one at a time: several start real nodes, and the machine has 2 cores.
    exec ctest --test-dir "$dir" --output-on-failure --timeout 300 ;;
  build)
    install_missing
    build "$dir" "${flags[@]}" ;;
  *)
    sed -n '2,9p' "${BASH_SOURCE[0]}" >&2
    exit 2 ;;
esac
