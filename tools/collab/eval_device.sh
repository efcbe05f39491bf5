#!/usr/bin/env bash
# The packs-collab measurement through `hogwild eval` (tools/collab/README.md, "Measuring"), in one
# run on a GPU machine:
#   tools/collab/eval_device.sh HOGWILD OUT [WORK]
# HOGWILD is the hogwild binary, or a .tar.xz of it and its shared libraries made here by
# tools/collab/pack_binary.sh (unpacked to /tmp/collab-bin; its lib/ on the binary's library path);
# OUT receives what comes back (7 files at most: summary.md, log.txt,
# report.tar.xz (tables, plots, summary.json), runs_k<K>.tar.xz (each K's result folders without
# transcripts, their collab.jsonl included, and its problems), transcripts.tar.xz (the transcripts
# of the first TRANSCRIPTS problems of every configuration)); WORK holds the result folders (default
# /tmp/collab-eval; an existing WORK, e.g. the runs_k*.tar.xz of an earlier call unpacked there, is
# resumed: every configuration skips the problems already in its folder).
#
# Problems: `hogwild collab problems --split test --seed 11`, COUNT per K. Configurations, most
# important first, each one `hogwild eval` folder WORK/k<K>/<name>: one worker; 2, 4 and 8
# workers in the combined layout; 4 workers interleaved and contiguous; self-consistency with 2, 4
# and 8 samples (temperature SC_TEMP, the independent layout); for K = 4 also 2 and 8 workers
# interleaved and contiguous. Greedy decoding but for self-consistency. Budgets
# every 25 serial steps up to 150 K + 200 (every 50 for K = 8). Passes: every K = 4 configuration
# on the first FIRST problems, then on COUNT, then K = 2 and K = 8 (each pass resumes the last),
# so a run cut short by the clock still has every K = 4 configuration.
#
# Environment (defaults): LIBS (a folder of the binary's shared libraries, or a .tar.xz of a folder
# lib/; on the binary's LD_LIBRARY_PATH), DEVICE (cuda), CONCURRENCY (64 sessions per forward), PARALLEL (4 eval
# processes at once), KV_TOKENS (1000000 per process: 7.6 GiB of bf16 KV for this model), COUNT
# (500), FIRST (100), KS ("4 2 8"), SC_TEMP (1.0), TIME_LIMIT (400: no eval runs past this many
# seconds after the start; the one in flight is stopped, losing only its sessions in flight),
# JOBS (processes reading transcripts for the report, default: every core), TRANSCRIPTS (50: the
# problems of each configuration whose transcripts come back), MODEL (the model directory:
# models/packs-collab), SPLIT (the problems' split: test; test-frames for new wording), ONLY (an
# extended regex: only the configurations whose names match it, e.g. 'single|hw4-combined'),
# WORDING (grammar; first: the first model's sentence frames, as docs/COLLAB.md measured).
set -uo pipefail
H=$(realpath "$1") OUT=$2 WORK=${3:-/tmp/collab-eval}
if [[ $H == *.tar.xz ]]; then
  rm -rf /tmp/collab-bin && mkdir -p /tmp/collab-bin && tar xJf "$H" -C /tmp/collab-bin || exit 1
  H=/tmp/collab-bin/hogwild LIBS=/tmp/collab-bin/lib
fi
HERE=$(cd "$(dirname "$0")" && pwd)
M=$(realpath "${MODEL:-$HERE/../../models/packs-collab}")
SPLIT=${SPLIT:-test} ONLY=${ONLY:-.*} WORDING=${WORDING:-grammar}
DEVICE=${DEVICE:-cuda} CONCURRENCY=${CONCURRENCY:-64} PARALLEL=${PARALLEL:-4}
KV_TOKENS=${KV_TOKENS:-1000000} COUNT=${COUNT:-500} FIRST=${FIRST:-100} KS=${KS:-4 2 8}
SC_TEMP=${SC_TEMP:-1.0} SECONDS_LEFT=${TIME_LIMIT:-400} JOBS=${JOBS:-$(nproc)}
TRANSCRIPTS=${TRANSCRIPTS:-50}
START=$(date +%s) DEADLINE=$(($(date +%s) + SECONDS_LEFT))
mkdir -p "$OUT" "$WORK"
LOG=$OUT/log.txt
say() { echo "[$(($(date +%s) - START)) s] $*" | tee -a "$LOG"; }
# The binary's library path (for it alone, not for python or tar): LIBS, then the machine's copy
# of any library still missing (cuBLAS of the CUDA toolkit or of the Python packages).
LDP=${LD_LIBRARY_PATH:-}
if [[ -n ${LIBS:-} ]]; then
  L=$LIBS
  if [[ -f $LIBS ]]; then
    mkdir -p /tmp/collab-lib && tar xJf "$LIBS" -C /tmp/collab-lib && L=/tmp/collab-lib/lib
  fi
  LDP=$(realpath "$L")${LDP:+:$LDP}
fi
for lib in $(LD_LIBRARY_PATH=$LDP ldd "$H" | awk '/not found/ {print $1}'); do
  f=$(find /usr/local/cuda*/ /opt /usr/lib -name "$lib" 2>/dev/null | head -1)
  if [[ -n $f ]]; then LDP=$LDP:$(dirname "$f"); else say "missing library: $lib"; fi
done
HW=(env "LD_LIBRARY_PATH=$LDP" "$H")
export PYTHONUNBUFFERED=1
[[ $DEVICE == cuda ]] && nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader | tee -a "$LOG"
"${HW[@]}" --version 2>&1 | head -1 | tee -a "$LOG"

budgets() {  # every 25 serial steps to 150 K + 200 (every 50 for K >= 8)
  local k=$1 step=25
  ((k >= 8)) && step=50
  seq -s, $step $step $((150 * k + 200))
}

# The configurations of one K: name, then the eval flags.
configs() {
  local k=$1 g="--greedy" s="--temperature $SC_TEMP"
  echo "single|--method single $g"
  echo "hw2-combined|--method hogwild -w 2 --layout combined $g"
  echo "hw4-combined|--method hogwild -w 4 --layout combined $g"
  echo "hw8-combined|--method hogwild -w 8 --layout combined $g"
  echo "hw4-interleaved|--method hogwild -w 4 --layout interleaved $g"
  echo "hw4-contiguous|--method hogwild -w 4 --layout contiguous $g"
  echo "sc2|--method self-consistency -w 2 $s"
  echo "sc4|--method self-consistency -w 4 $s"
  echo "sc8|--method self-consistency -w 8 $s"
  if ((k == 4)); then
    echo "hw2-interleaved|--method hogwild -w 2 --layout interleaved $g"
    echo "hw2-contiguous|--method hogwild -w 2 --layout contiguous $g"
    echo "hw8-interleaved|--method hogwild -w 8 --layout interleaved $g"
    echo "hw8-contiguous|--method hogwild -w 8 --layout contiguous $g"
  fi
}

run_one() {  # K NAME LIMIT FLAGS...
  local k=$1 name=$2 limit=$3
  shift 3
  local left=$((DEADLINE - $(date +%s))) t0
  t0=$(date +%s)
  timeout --signal=TERM --kill-after=10 $left "${HW[@]}" eval -m "$M" \
    --format "$M/hogwild_format.json" --dataset "$WORK/problems_k$k.jsonl" \
    --question-field problem --answer-field answer --id-field id --budgets "$(budgets "$k")" \
    --device "$DEVICE" --kv-tokens "$KV_TOKENS" --concurrency "$CONCURRENCY" --limit "$limit" \
    --out "$WORK/k$k/$name" "$@" >"$WORK/k$k/$name.log" 2>&1
  local rc=$?
  local acc
  acc=$(grep -E '^\| ' "$WORK/k$k/$name.log" | tail -1)
  say "k$k/$name (limit $limit): rc $rc, $(($(date +%s) - t0)) s; $acc"
  if ((rc != 0)); then tail -3 "$WORK/k$k/$name.log" | tee -a "$LOG"; fi
}

pass() {  # K LIMIT: every configuration of K, PARALLEL at a time, in order
  local k=$1 limit=$2 line
  mkdir -p "$WORK/k$k"
  "${HW[@]}" collab problems --split "$SPLIT" --wording "$WORDING" --k "$k" --count "$COUNT" --seed 11 \
    --out "$WORK/problems_k$k.jsonl"
  while IFS= read -r line; do
    [[ ${line%%|*} =~ ^($ONLY)$ ]] || continue
    while (($(jobs -rp | wc -l) >= PARALLEL)); do wait -n; done
    if ((DEADLINE - $(date +%s) < 15)); then
      say "skip k$k/${line%%|*} (limit $limit): out of time"
      continue
    fi
    # shellcheck disable=SC2086  # the flags split into words
    run_one "$k" "${line%%|*}" "$limit" ${line#*|} &
    sleep 1  # the order of starts is the order of importance
  done < <(configs "$k")
  wait
}

for k in $KS; do
  ((k == 4 && FIRST < COUNT)) && pass 4 "$FIRST"
  pass "$k" "$COUNT"
done
say "runs done"

python3 "$HERE/eval.py" report "$WORK" --out "$WORK/report" --jobs "$JOBS" >/dev/null 2>>"$LOG" ||
  say "REPORT FAILED"
cp "$WORK/report/summary.md" "$OUT/" 2>/dev/null
export XZ_OPT=-T0
for k in $KS; do  # one archive per K (each file that comes back is at most 16 MiB)
  (cd "$WORK" && tar cJf "$OUT/runs_k$k.tar.xz" --exclude=transcripts "k$k" "problems_k$k.jsonl")
done
(cd "$WORK" && tar cJf "$OUT/report.tar.xz" report)
# The transcripts of the first TRANSCRIPTS problems of each configuration, for reading.
(cd "$WORK" && for k in $KS; do
  head -"$TRANSCRIPTS" "problems_k$k.jsonl" 2>/dev/null | python3 -c '
import json, sys
sys.path.insert(0, sys.argv[1])
from eval import transcript_name
for line in sys.stdin:
    print(transcript_name(json.loads(line)["id"], 0))' "$HERE" |
    while read -r f; do ls "k$k"/*/transcripts/"$f" 2>/dev/null; done
done) >/tmp/collab-eval-transcripts.txt
(cd "$WORK" && tar cJf "$OUT/transcripts.tar.xz" -T /tmp/collab-eval-transcripts.txt)
say "packed: $(du -sh "$OUT"/*.tar.xz | tr '\n' ' ')"
ls -la "$OUT"
