#!/usr/bin/env bash
# The shared libraries a hogwild binary built here needs on the GPU machine, as OUT.tar.xz holding
# lib/ (LIBS of eval_device.sh, lib.tar.xz of device_pipeline.sh):
#   tools/collab/pack_libs.sh build/hogwild carry/lib.tar.xz
# Left out: the C library and loader, and CUDA's own libraries (the driver's libcuda, the toolkit's
# cudart, cuBLAS and nv* libraries), which the GPU machine has.
set -euo pipefail
BIN=$1 OUT=$2
T=$(mktemp -d)
mkdir -p "$T/lib"
ldd "$BIN" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' |
  grep -Ev '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*|libcuda|libcudart|libcublas[^/]*|libnv[^/]*)\.so' |
  while read -r f; do cp -L "$f" "$T/lib/"; done
tar cJf "$OUT" -C "$T" lib
echo "$OUT: $(find "$T/lib" -type f | wc -l) libraries, $(du -h "$OUT" | cut -f1)"
rm -rf "$T"
