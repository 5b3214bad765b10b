#!/usr/bin/env bash
# Where the mount's S3 read time goes (README.md beside this script): one 256 MiB adz object
# (mixed, S1 at --throttle 117MB/s) read with dd through adz mount over S3 (default flags,
# --read-ahead 64MiB, --streams 8) and over a local directory, against adz decompress of it
# (default, -T 1, local); 3 interleaved rounds. Same needs as run.sh; stdout: variant,rep,seconds.
set -euo pipefail
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
target=${TARGET:-$root/target/release}
export CACHE=${CACHE:-$root/.cache}
adz=$target/adz
w=/dev/shm/adz-mount-s3-explore
rm -rf $w; mkdir -p $w/minio $w/mnt $w/local $w/spool
"$target/adz-bench" datasets --cache $w/cache --datasets mixed --size 268435456 >&2
in=$w/cache/datasets/gen/mixed-268435456-1.bin
TMPDIR=$w/minio "$root/scripts/minio.sh" start $w/minio >&2
trap '"$root/scripts/minio.sh" stop $w/minio >&2' EXIT
. $w/minio/env
url=s3://$ADZ_S3_BUCKET/x
$adz compress -q -f -s throughput --throttle 117MB/s $in $url/f.adz
$adz decompress -q $url/f.adz - >/dev/null
$adz compress -q -f -s throughput --throttle 117MB/s $in $w/local/f.adz
t() { local a b; a=$(date +%s.%N); "$@"; b=$(date +%s.%N); echo "$b - $a" | bc; }
rd() { # label source flags...
  local label=$1 src=$2; shift 2
  $adz mount --spool $w/spool "$@" $src $w/mnt
  for _ in $(seq 200); do mountpoint -q $w/mnt && break; sleep 0.05; done
  echo "$label,$rep,$(t dd if=$w/mnt/f of=/dev/null bs=1M status=none)"
  umount $w/mnt
  for _ in $(seq 600); do pgrep -f "adz mount .*$w/mnt\$" >/dev/null || break; sleep 0.05; done
}
echo "variant,rep,seconds"
for rep in 1 2 3; do
  echo "decompress-s3,$rep,$(t sh -c "$adz decompress -q $url/f.adz - >/dev/null")"
  rd mount-s3 $url/
  rd mount-s3-ra64M $url/ --read-ahead 64MiB
  rd mount-s3-streams8 $url/ --streams 8
  rd mount-local $w/local
  echo "decompress-local,$rep,$(t sh -c "$adz decompress -q $w/local/f.adz - >/dev/null")"
  echo "decompress-s3-T1,$rep,$(t sh -c "$adz decompress -q -T 1 $url/f.adz - >/dev/null")"
done
