#!/usr/bin/env bash
# Installs the system packages Valley builds and tests with (Debian). Idempotent: installs only
# what is missing, and refreshes the package lists only when something is.
set -euo pipefail
pkgs=(
  build-essential cmake ninja-build ccache pkg-config git curl ca-certificates openssl procps bc
  libcurl4-openssl-dev nlohmann-json3-dev libyaml-cpp-dev libboost-dev libboost-system-dev
  libspdlog-dev libfmt-dev libssl-dev libgtest-dev libgmock-dev googletest
  clang libclang-rt-14-dev openmpi-bin libopenmpi-dev tzdata openssh-server openssh-client
  glpk-utils gnuplot-nox libfaketime
  prometheus python3-yaml
  runc containernetworking-plugins iptables ipset iproute2 debootstrap socat
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "deps: installing ${missing[*]}"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "deps: system packages present"
fi

# The Kubernetes components are built from source with Go. Debian's Go is too old for the pinned
# release; the machine's toolchain (Go >= 1.21) fetches the version go.mod asks for from the Go
# module proxy by itself (GOTOOLCHAIN=auto).
if ! command -v go >/dev/null 2>&1; then
  echo "deps: no Go toolchain on PATH; install Go >= 1.21 (https://go.dev/doc/install)" >&2
  exit 1
fi
go_minor=$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')
if [ "${go_minor:-0}" -lt 21 ]; then
  echo "deps: $(go env GOVERSION) is too old; Go >= 1.21 is needed" >&2
  exit 1
fi
echo "deps: $(go env GOVERSION)"
