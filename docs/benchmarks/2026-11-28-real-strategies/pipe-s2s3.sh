#!/bin/bash
# S2/S3 through a pv pipe at 117 MB/s, old (adz-new: before 0063) vs new (adz-paced)
# binary, interleaved; CSV: round,file,strategy,build,seconds,ratio,raw seconds at 117 MB/s.
for r in 1 2 3; do
  for f in real-fits.fits real-nifti.nii real-fastq.fq; do
    for s in keep-pace prolong=1.5; do
      for b in adz-new adz-paced; do
        t0=$(date +%s.%N)
        /dev/shm/$b compress -q -s $s - - < /dev/shm/real/$f | pv -q -L 117m > /dev/shm/pipe-out
        t1=$(date +%s.%N)
        sz=$(stat -c %s /dev/shm/pipe-out); raw=$(stat -L -c %s /dev/shm/real/$f)
        echo "$r,$f,$s,$b,$(echo "$t1 - $t0" | bc),$(echo "scale=4; $raw / $sz" | bc),$(echo "scale=4; $raw / 117000000" | bc)"
      done
    done
  done
done
