//! Measuring a rung: the sample's slices (or a whole stream) encoded as a writer's worker
//! encodes a block, timed, and combined into a speed and a ratio for the write.

use std::io::Read;
use std::time::Instant;

use adz_codec::max_compressed_len;
use adz_format::{CodecSpec, FRAME_HEADER_LEN};

use super::{Predictor, RungPerf, Sample};
use crate::{Error, Result};

impl Predictor {
    /// Compress every slice of `sample` with `spec` (as blocks of at most the block size):
    /// the rung's performance and the bytes compressed.
    ///
    /// Each slice stands for [`Sample::weight`] bytes of the write: the ratio is the write's
    /// bytes over the sum of each slice's stored bytes per raw byte times its weight, the
    /// speed likewise with seconds (equal weights: all raw over all stored). A slice is part
    /// of a block, so it carries its share of the block's frame header (`56 x len / block`)
    /// rather than a whole header: a 16 KiB slice of sparse data compresses to about 200
    /// bytes, and a whole header would halve its ratio.
    ///
    /// A rung's first call pays the codec's set-up (zstd allocates and clears its tables),
    /// which a writer's worker pays once per rung for the whole write (docs/PREDICTOR.md,
    /// "Method"). So the longest slice (whose set-up fits the others) is compressed first and
    /// its time is not taken: its seconds per byte are those of the other slices of its
    /// kind, or, if it is its kind's only slice, of a second call ([`Sample::measured_bytes`]
    /// counts it).
    pub fn measure(&mut self, sample: &Sample, spec: CodecSpec) -> Result<(RungPerf, u64)> {
        let bs = self.cfg.block_size.clamp(1, crate::format::MAX_FRAME_RAW_LEN as u64) as usize;
        let block = bs.min(sample.data_len.clamp(1, usize::MAX as u64) as usize) as f64;
        let n = sample.slices.len();
        let Some(first) = sample.setup_slice() else {
            return Ok((RungPerf::new(f64::INFINITY, 1.0), 0));
        };
        let mut slices = vec![SliceMeasure::default(); n];
        let mut bytes = 0u64;
        for i in std::iter::once(first).chain((0..n).filter(|&i| i != first)) {
            let acc = self.measure_slice(&sample.slices[i].1, spec, bs, block)?;
            bytes += acc.raw;
            slices[i] = SliceMeasure {
                raw: acc.raw,
                stored: acc.stored,
                secs: acc.secs(),
                weight: sample.weight(i),
                kind: sample.classes.get(i).copied(),
            };
        }
        if slices[first].raw > 0 {
            slices[first].secs = match warm_secs(&slices, first) {
                Some(secs) => secs,
                None => {
                    let again = self.measure_slice(&sample.slices[first].1, spec, bs, block)?;
                    bytes += again.raw;
                    again.secs()
                }
            };
        }
        Ok((combine(&slices), bytes))
    }

    /// One slice compressed as blocks of at most `bs` bytes, each carrying its share of a
    /// `block`-byte block's frame header.
    fn measure_slice(
        &mut self,
        slice: &[u8],
        spec: CodecSpec,
        bs: usize,
        block: f64,
    ) -> Result<Accumulator> {
        let mut acc = Accumulator { header: FRAME_HEADER_LEN as f64 / block, ..Default::default() };
        for part in slice.chunks(bs) {
            self.compress_block(part, spec, &mut acc)?;
        }
        Ok(acc)
    }

    /// Compress all of `src` block by block with `spec` (one thread): what the rung really
    /// does on the data, for checking a prediction. Memory: one block.
    pub fn measure_stream(&mut self, src: &mut dyn Read, spec: CodecSpec) -> Result<RungPerf> {
        let bs = self.cfg.block_size.clamp(1, crate::format::MAX_FRAME_RAW_LEN as u64) as usize;
        let mut block = vec![0u8; bs];
        let mut acc = Accumulator::default();
        loop {
            let mut n = 0;
            while n < bs {
                match src.read(&mut block[n..]) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(Error::io("reading the input", e)),
                }
            }
            if n == 0 {
                break;
            }
            self.compress_block(&block[..n], spec, &mut acc)?;
            if n < bs {
                break;
            }
        }
        Ok(acc.perf())
    }

    /// Encode `block` into a frame as a writer's worker does (`FrameEncoder`: the raw and
    /// payload checksums, the filters, the codec, the raw fallback), timing all of it: at
    /// fast links the write is compression-bound, and the worker's time per block is what
    /// sets its pace, not the codec's alone.
    fn compress_block(
        &mut self,
        block: &[u8],
        spec: CodecSpec,
        acc: &mut Accumulator,
    ) -> Result<()> {
        // The buffer is sized before the clock starts: the writer's workers reuse theirs,
        // and growing one (a fresh allocation, zero-filled, faulted in) on the first block of
        // a rung cost that rung a block's worth of time on fast data.
        let need = FRAME_HEADER_LEN + max_compressed_len(spec.id(), block.len()).max(block.len());
        if self.out.len() < need {
            self.out.resize(need, 0);
        }
        let cpu0 = cpu_time::ThreadTime::now();
        let wall0 = Instant::now();
        let (header, ..) = self
            .encoder
            .encode_at(block, 0, spec, self.cfg.filters, self.cfg.keep_threshold, &mut self.out, 0)
            .map_err(|e| match e {
                Error::Codec { source, .. } => Error::Predict(source),
                e => e,
            })?;
        let cpu = cpu0.elapsed().as_secs_f64();
        let wall = wall0.elapsed().as_secs_f64();
        acc.add(block.len() as u64, u64::from(header.stored_len), cpu, wall);
        Ok(())
    }
}

/// One slice's measurement with one rung.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct SliceMeasure {
    /// Raw bytes compressed.
    raw: u64,
    /// Bytes stored for them (frame header share included).
    stored: f64,
    /// Seconds they took.
    secs: f64,
    /// Bytes of the write the slice stands for.
    weight: f64,
    /// The entropy class it was placed for (a stratified sample), None: data of one kind.
    kind: Option<u8>,
}

/// The seconds slice `first` (the one that paid the codec's set-up) would have taken warm:
/// its raw bytes at the weighted mean seconds per byte of the other slices of its kind. None
/// if it is its kind's only slice.
fn warm_secs(slices: &[SliceMeasure], first: usize) -> Option<f64> {
    let me = slices.get(first)?;
    let (mut w, mut per_byte) = (0.0f64, 0.0f64);
    for (i, s) in slices.iter().enumerate() {
        if i != first && s.kind == me.kind && s.raw > 0 && s.weight > 0.0 {
            w += s.weight;
            per_byte += s.weight * s.secs / s.raw as f64;
        }
    }
    (w > 0.0).then(|| per_byte / w * me.raw as f64)
}

/// A rung's performance from its slices: the write's bytes over the sum of each slice's
/// stored bytes (seconds) per raw byte times the bytes it stands for (equal weights: all raw
/// over all stored). A stratified sample's slices are also combined by kind
/// ([`RungPerf::kinds`]), so that the write time can be reckoned kind by kind.
fn combine(slices: &[SliceMeasure]) -> RungPerf {
    let pooled = pool(slices);
    let mut kinds: Vec<(u8, f64, f64)> = Vec::new();
    let mut classes: Vec<u8> = slices.iter().filter_map(|s| s.kind).collect();
    classes.sort_unstable();
    classes.dedup();
    if classes.len() > 1 {
        for class in classes {
            let of: Vec<SliceMeasure> =
                slices.iter().filter(|s| s.kind == Some(class)).copied().collect();
            if of.iter().any(|s| s.raw > 0) {
                let p = pool(&of);
                kinds.push((class, p.speed, p.ratio));
            }
        }
    }
    pooled.with_kinds(&kinds)
}

/// `combine` without the kinds: one speed and ratio for all of `slices`.
fn pool(slices: &[SliceMeasure]) -> RungPerf {
    let (mut weight, mut stored, mut secs) = (0.0f64, 0.0f64, 0.0f64);
    for s in slices.iter().filter(|s| s.raw > 0) {
        weight += s.weight;
        stored += s.weight * s.stored / s.raw as f64;
        secs += s.weight * s.secs / s.raw as f64;
    }
    if weight > 0.0 {
        return RungPerf::new(
            if secs > 0.0 { weight / secs } else { f64::INFINITY },
            if stored > 0.0 { weight / stored } else { 1.0 },
        );
    }
    // No weights: all raw over all stored.
    let raw: u64 = slices.iter().map(|s| s.raw).sum();
    let stored: f64 = slices.iter().map(|s| s.stored).sum();
    let secs: f64 = slices.iter().map(|s| s.secs).sum();
    RungPerf::new(
        if secs > 0.0 { raw as f64 / secs } else { f64::INFINITY },
        if stored > 0.0 { raw as f64 / stored } else { 1.0 },
    )
}

/// Sums over the blocks of one rung's measurement.
#[derive(Default)]
struct Accumulator {
    raw: u64,
    stored: f64,
    cpu: f64,
    wall: f64,
    /// Frame header bytes per raw byte (a sample's slices: its share of a block's header);
    /// 0: a whole header per block compressed (the whole input, as the writer stores it).
    header: f64,
}

impl Accumulator {
    /// A block of `raw` bytes stored in `stored` payload bytes (the raw bytes if the
    /// encoder kept them raw, as the writer does for a block that does not save enough).
    fn add(&mut self, raw: u64, stored: u64, cpu: f64, wall: f64) {
        let header =
            if self.header > 0.0 { self.header * raw as f64 } else { FRAME_HEADER_LEN as f64 };
        self.raw += raw;
        self.stored += stored as f64 + header;
        self.cpu += cpu;
        self.wall += wall;
    }

    /// CPU time: the machine is shared, and the workers' speed is what the sample's thread
    /// would get alone. Wall time where the platform has no thread CPU clock.
    fn secs(&self) -> f64 {
        if self.cpu > 0.0 {
            self.cpu
        } else {
            self.wall
        }
    }

    fn perf(&self) -> RungPerf {
        let secs = self.secs();
        RungPerf::new(
            if secs > 0.0 { self.raw as f64 / secs } else { f64::INFINITY },
            if self.stored > 0.0 { self.raw as f64 / self.stored } else { 1.0 },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(raw: u64, secs: f64, kind: Option<u8>) -> SliceMeasure {
        SliceMeasure { raw, stored: raw as f64 / 2.0, secs, weight: raw as f64, kind }
    }

    /// The slice that set the rung up took ten times as long as it would warm; the rung's
    /// speed is that of the warm slices, not a third lower.
    #[test]
    fn the_set_up_slice_takes_its_kinds_time() {
        // Three slices of 100 kB at 1 ms each (100 MB/s), the first one cold (10 ms).
        let mut s = vec![slice(100_000, 0.010, None), slice(100_000, 0.001, None)];
        s.push(slice(100_000, 0.001, None));
        let cold = combine(&s).speed;
        assert!((cold / 25e6 - 1.0).abs() < 1e-9, "{cold}: 300 kB in 12 ms");
        s[0].secs = warm_secs(&s, 0).unwrap();
        assert!((s[0].secs / 0.001 - 1.0).abs() < 1e-9);
        assert!((combine(&s).speed / 100e6 - 1.0).abs() < 1e-9);
        // Per byte: a longer set-up slice takes proportionally longer.
        s[0].raw = 200_000;
        assert!((warm_secs(&s, 0).unwrap() / 0.002 - 1.0).abs() < 1e-9);
    }

    /// Only slices of the set-up slice's kind stand in for it (sparse data compresses ten
    /// times faster than text); alone of its kind it has no stand-in, and is measured again.
    #[test]
    fn only_its_own_kind_stands_in_for_the_set_up_slice() {
        let s = [
            slice(100_000, 0.010, Some(2)),
            slice(100_000, 0.0001, Some(1)),
            slice(50_000, 0.0005, Some(2)),
        ];
        assert!((warm_secs(&s, 0).unwrap() / 0.001 - 1.0).abs() < 1e-9);
        assert_eq!(warm_secs(&s, 1), None);
        let one = [slice(100_000, 0.010, None)];
        assert_eq!(warm_secs(&one, 0), None);
        // Slices with no bytes or no weight say nothing.
        let empty = [slice(100_000, 0.010, None), slice(0, 0.0, None)];
        assert_eq!(warm_secs(&empty, 0), None);
    }
}
