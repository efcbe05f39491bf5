#!/usr/bin/env bash
# Installs what hogwild needs on Debian 12: build tools and libraries (apt), and the reference
# implementations its tests compare against (npm, into tools/js/node_modules). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  nlohmann-json3-dev libfmt-dev libcli11-dev libopenblas-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libpcre2-dev libutf8proc-dev libcpp-httplib-dev libgmp-dev
  bubblewrap gnuplot-nox
  clang libclang-rt-14-dev clang-format
  python3 python3-jinja2 nodejs chromium
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm ships inside nodejs on some images (nodesource); Debian's own nodejs needs the npm package.
command -v npm >/dev/null 2>&1 || missing+=(npm)
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -f tools/js/node_modules/.package-lock.json ] || [ tools/js/package-lock.json -nt tools/js/node_modules/.package-lock.json ]; then
  echo "setup: installing npm reference packages (tools/js)"
  (cd tools/js && npm ci --no-audit --no-fund --loglevel=error)
fi
