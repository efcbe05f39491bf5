#!/usr/bin/env bash
# A hogwild binary built here and the shared libraries it needs on the GPU machine, as one
# OUT.tar.xz holding hogwild and lib/ (the first argument of eval_device.sh; its lib/ is also what
# device_pipeline.sh unpacks from lib.tar.xz):
#   tools/collab/pack_binary.sh build/hogwild dist/hogwild.tar.xz
# Left out: the C library and loader, and CUDA's own libraries (the driver's libcuda, the toolkit's
# cudart, cuBLAS and nv* libraries), which the GPU machine has.
set -euo pipefail
BIN=$1 OUT=$2
T=$(mktemp -d)
mkdir -p "$T/lib"
cp "$BIN" "$T/hogwild"
ldd "$BIN" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' |
  grep -Ev '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*|libcuda|libcudart|libcublas[^/]*|libnv[^/]*)\.so' |
  while read -r f; do cp -L "$f" "$T/lib/"; done
XZ_OPT=-9 tar cJf "$OUT" -C "$T" hogwild lib
echo "$OUT: hogwild and $(find "$T/lib" -type f | wc -l) libraries, $(du -h "$OUT" | cut -f1)"
rm -rf "$T"
