#!/usr/bin/env bash
# Each write after the machine has idled for IDLE seconds (4), as a user's one-off command
# starts: ROUNDS rounds, the builds x tools in an order rotated from round to round.
# Usage: run.sh ROUNDS OUT.csv "NAME=BIN ..." "TOOL ..." FILE...
#   TOOL: s1 (S1, --link auto), s1-given (S1, --link RATE), static:C (-s static=C)
# Prints build,tool,file,round,position,seconds,stored.
set -euo pipefail
rounds=$1 out=$2 builds=($3) tools=($4); shift 4
RATE="${RATE:-125MB/s}" IDLE="${IDLE:-4}" TMP="${TMP:-/dev/shm/cold}"
mkdir -p "$TMP"
echo "build,tool,file,round,position,seconds,stored" > "$out"
cells=()
for b in "${builds[@]}"; do for t in "${tools[@]}"; do cells+=("$b|$t"); done; done
for r in $(seq 0 $((rounds - 1))); do
    for f in "$@"; do
        n=${#cells[@]}
        for i in $(seq 0 $((n - 1))); do
            cell=${cells[$(( (i + r) % n ))]}
            b=${cell%%|*} t=${cell#*|}
            bin=${b#*=} name=${b%%=*}
            case $t in
                s1) args=(-s throughput) ;;
                s1-given) args=(-s throughput --link "$RATE") ;;
                static:*) args=(-s "static=${t#static:}") ;;
            esac
            sleep "$IDLE"
            s=$(date +%s.%N)
            "$bin" compress -q -f "${args[@]}" --throttle "$RATE" "$f" "$TMP/out.adz"
            e=$(date +%s.%N)
            echo "$name,$t,$(basename "$f"),$r,$i,$(echo "$e - $s" | bc),$(stat -c %s "$TMP/out.adz")" >> "$out"
        done
    done
done
