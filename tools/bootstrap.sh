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

missing=()
for p in "${packages[@]}"; do
  [ -z "$p" ] && continue
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: all ${#packages[@]} Debian packages present"
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
