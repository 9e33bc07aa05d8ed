#!/usr/bin/env bash
# Installs the Debian packages msomni needs, only those missing. As root it runs apt-get;
# otherwise it prints the command to run and fails.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libcaf-dev libucx-dev ucx-utils libtomlplusplus-dev doctest-dev
  libavcodec-dev libavformat-dev libswscale-dev libavutil-dev ffmpeg
  libzstd-dev libxxhash-dev libopenblas-dev libssl-dev
  nlohmann-json3-dev libcli11-dev
  prometheus-cpp-dev prometheus libncurses-dev tmux
  libcurl4-openssl-dev etcd-server etcd-client
  slurm-wlm munge
  python3-matplotlib python3-torch
  patchelf xz-utils
)
# Extra packages for a caller (e.g. benchmarks): MSOMNI_EXTRA_PACKAGES="python3-torch python3-av openmpi-bin"
read -r -a extra <<< "${MSOMNI_EXTRA_PACKAGES:-}"
packages+=("${extra[@]}")

# The S3 server the remote-source tests and bench start on loopback (s3rver, npm), kept in
# tools/node_modules (gitignored), never installed globally. Skipped, with the reason, when
# npm is missing: those tests then report themselves skipped.
install_node_tools() {
  if ! command -v npm >/dev/null 2>&1; then
    echo "bootstrap: npm not found; the s3:// tests will be skipped (install nodejs and npm, then rerun)"
    return 0
  fi
  local tools_dir
  tools_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  if [ ! -x "$tools_dir/node_modules/.bin/s3rver" ]; then
    echo "bootstrap: installing s3rver 3.7.1 into $tools_dir/node_modules"
    npm install --prefix "$tools_dir" --no-save --no-audit --no-fund s3rver@3.7.1
  fi
}

missing=()
for p in "${packages[@]}"; do
  [ -z "$p" ] && continue
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: all ${#packages[@]} Debian packages present"
  install_node_tools
  exit 0
fi

echo "bootstrap: installing ${#missing[@]} missing packages: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "bootstrap: not root; run: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
install_node_tools
