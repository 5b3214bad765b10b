//! Multi-reference sizing: how large a file's frames should be, from how often it will be read.
//!
//! Every adz frame is an independent *reference point* in the sense of multi-reference
//! compression (MRC, seed paper 003 section II-C): a reader can start decoding at any frame, and
//! a small read decodes the one frame that holds it. More, smaller frames make small reads
//! cheaper and cost ratio (each frame restarts the codec's window and carries 96 bytes of
//! header and index). MRC's rule for the number of references that maximises end-to-end
//! throughput is
//!
//! ```text
//!     R = sqrt(N · (Bw / Br) · (Wi / Wo))
//! ```
//!
//! with N data entries, write and read bandwidths Bw and Br, and input (read) and output
//! (write) weights Wi and Wo. The terms map to adz as follows (docs/ARCHITECTURE.md,
//! "Multi-reference frame sizing", has the derivation):
//!
//! - **R** is the number of frames, so the frame size is `S / R` for a file of S raw bytes.
//! - **N** is `S / c`, where `c` is what one reference point costs. In MRC a reference is a
//!   stored copy of one data entry, so an entry is exactly the cost of a reference. In adz a
//!   reference is a frame boundary, and costs the bytes the codec loses by restarting plus the
//!   frame's header and index entry: [`REFERENCE_COST`] (4 KiB), from the frame-size sweeps
//!   in docs/benchmarks/2026-11-23-filters.
//! - **Bw / Br** is the write link over the read link (both given or measured; equal when the
//!   read link is not known).
//! - **Wi / Wo** is the `reads-per-write=K` hint: small random reads served per full write of
//!   the data. K = 0 (write-only, archive) asks for as few references as possible.
//!
//! The result is rounded to a power of two and clamped to [`MIN_FRAME`] ..= [`MAX_FRAME`], and
//! to no more than the file itself needs.
//!
//! ```
//! use adz_control::mrc::{auto_frame_size, MrcInput};
//!
//! let gib = 1u64 << 30;
//! let write_once = auto_frame_size(&MrcInput::new(gib, 0.0));
//! let read_often = auto_frame_size(&MrcInput::new(gib, 10.0));
//! assert_eq!(write_once.frame_size, 16 << 20);
//! assert_eq!(read_often.frame_size, 512 << 10);
//! ```

/// The smallest frame `auto` chooses: 64 KiB. Below it per-frame costs (codec restarts, 96
/// bytes of header and index) take a visible share of the ratio.
pub const MIN_FRAME: u32 = 64 << 10;

/// The largest frame `auto` chooses: 16 MiB. Beyond it codecs gain nothing measurable, and
/// every write buffers 2 x buffers x frame size.
pub const MAX_FRAME: u32 = 16 << 20;

/// What one reference point (one frame boundary) costs, in raw bytes: 4 KiB. With zstd:3 one
/// more frame stores 2 KiB (text) to 3.5 KiB (a doubles matrix through `xor:8,shuffle:8`) more,
/// headers included, which is 4.6 to 7.5 KiB of raw data at those files' ratios
/// (docs/benchmarks/2026-11-23-filters). 4 KiB is the low end: it leans towards more, smaller
/// frames, i.e. cheaper reads; 8 KiB would make frames sqrt(2) larger.
pub const REFERENCE_COST: u64 = 4 << 10;

/// What `auto` knows when it chooses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MrcInput {
    /// S: raw bytes of the file.
    pub raw_size: u64,
    /// Bw: bytes per second to storage when writing. Only the ratio to `read_bw` matters.
    pub write_bw: f64,
    /// Br: bytes per second from storage when reading.
    pub read_bw: f64,
    /// Wi / Wo: small reads per write (the `reads-per-write` hint).
    pub reads_per_write: f64,
    /// c: raw bytes one reference point costs; N = S / c.
    pub reference_cost: u64,
}

impl MrcInput {
    /// A file of `raw_size` bytes read `reads_per_write` times per write, over equal read and
    /// write links, with the default [`REFERENCE_COST`].
    pub fn new(raw_size: u64, reads_per_write: f64) -> MrcInput {
        MrcInput {
            raw_size,
            write_bw: 1.0,
            read_bw: 1.0,
            reads_per_write,
            reference_cost: REFERENCE_COST,
        }
    }

    /// The same, with write and read bandwidths (bytes/s).
    pub fn with_links(self, write_bw: f64, read_bw: f64) -> MrcInput {
        MrcInput { write_bw, read_bw, ..self }
    }
}

/// What `auto` chose, with the terms it used (for `--help`, messages and traces).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MrcChoice {
    /// N = S / c.
    pub entries: f64,
    /// Bw / Br as used (1 when either is unknown or not positive).
    pub bandwidth_ratio: f64,
    /// Wi / Wo as used.
    pub weight_ratio: f64,
    /// R = sqrt(N · Bw/Br · Wi/Wo), before rounding.
    pub references: f64,
    /// S / R in bytes, before rounding and clamping (infinite when R = 0).
    pub ideal_frame: f64,
    /// The frame size: a power of two in [`MIN_FRAME`] ..= [`MAX_FRAME`].
    pub frame_size: u32,
}

/// MRC's optimal number of references, `sqrt(n · bw_over_br · wi_over_wo)`. Arguments that are
/// negative or not finite count as 0.
pub(crate) fn references(n: f64, bw_over_br: f64, wi_over_wo: f64) -> f64 {
    let clean = |x: f64| if x.is_finite() && x > 0.0 { x } else { 0.0 };
    (clean(n) * clean(bw_over_br) * clean(wi_over_wo)).sqrt()
}

/// The frame size for `--frame-size auto`.
pub fn auto_frame_size(input: &MrcInput) -> MrcChoice {
    let s = input.raw_size as f64;
    let entries = s / input.reference_cost.max(1) as f64;
    let bandwidth_ratio = match (input.write_bw, input.read_bw) {
        (w, r) if w.is_finite() && r.is_finite() && w > 0.0 && r > 0.0 => w / r,
        _ => 1.0,
    };
    let weight_ratio =
        if input.reads_per_write.is_finite() { input.reads_per_write.max(0.0) } else { 0.0 };
    let r = references(entries, bandwidth_ratio, weight_ratio);
    let ideal_frame = if r > 0.0 { s / r } else { f64::INFINITY };
    MrcChoice {
        entries,
        bandwidth_ratio,
        weight_ratio,
        references: r,
        ideal_frame,
        frame_size: round_frame(ideal_frame, input.raw_size),
    }
}

/// `ideal` rounded to the nearest power of two (on a log scale), clamped to
/// `MIN_FRAME ..= MAX_FRAME` and to the power of two that holds the whole file.
fn round_frame(ideal: f64, raw_size: u64) -> u32 {
    let whole_file = raw_size
        .max(1)
        .checked_next_power_of_two()
        .map_or(MAX_FRAME, |p| p.min(u64::from(MAX_FRAME)) as u32);
    let cap = whole_file.max(MIN_FRAME);
    if ideal.is_nan() || ideal < 1.0 {
        return MIN_FRAME;
    }
    let exp = ideal.log2().round();
    let size = if exp >= 31.0 { u32::MAX } else { 1u32 << exp as u32 };
    size.clamp(MIN_FRAME, cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;

    fn frame(size: u64, k: f64) -> u32 {
        auto_frame_size(&MrcInput::new(size, k)).frame_size
    }

    #[test]
    fn the_formula_is_the_papers() {
        assert_eq!(references(100.0, 1.0, 1.0), 10.0);
        assert_eq!(references(100.0, 4.0, 1.0), 20.0);
        assert_eq!(references(100.0, 1.0, 0.25), 5.0);
        assert_eq!(references(100.0, 1.0, 0.0), 0.0);
        assert_eq!(references(f64::NAN, 1.0, 1.0), 0.0);
        // The paper's simplified rule: comparable reads and writes give sqrt(N) references.
        let c = auto_frame_size(&MrcInput::new(GIB, 1.0));
        assert_eq!(c.entries, (GIB / REFERENCE_COST) as f64);
        assert!((c.references - c.entries.sqrt()).abs() < 1e-9);
        // 1 GiB with 4 KiB references: sqrt(2^18) = 512 references of 2 MiB.
        assert_eq!(c.frame_size, 2 << 20);
    }

    #[test]
    fn more_reads_never_mean_larger_frames() {
        for size in [MIB, 16 * MIB, 300 * MIB, GIB, 64 * GIB] {
            let mut last = u32::MAX;
            for k in [0.0, 0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 100.0, 1e4, 1e9] {
                let f = frame(size, k);
                assert!(f <= last, "size {size}: K={k} gives {f} > {last}");
                last = f;
            }
        }
    }

    #[test]
    fn larger_files_never_mean_smaller_frames() {
        for k in [0.0, 0.3, 1.0, 10.0, 1000.0] {
            let mut last = 0;
            for size in [1, 1000, MIB, 7 * MIB, 100 * MIB, GIB, 10 * GIB, 1 << 44] {
                let f = frame(size, k);
                assert!(f >= last, "K={k}: size {size} gives {f} < {last}");
                last = f;
            }
        }
    }

    #[test]
    fn a_faster_write_link_means_more_references() {
        // Relative to reading, writing references costs less: smaller frames.
        let base = MrcInput::new(GIB, 1.0);
        let slow_write = auto_frame_size(&base.with_links(100e6, 1000e6)).frame_size;
        let equal = auto_frame_size(&base.with_links(1000e6, 1000e6)).frame_size;
        let fast_write = auto_frame_size(&base.with_links(1000e6, 100e6)).frame_size;
        assert!(slow_write > equal && equal > fast_write, "{slow_write} {equal} {fast_write}");
        // Unknown or nonsense bandwidths count as equal links.
        for (w, r) in [(0.0, 1e9), (f64::NAN, 1e9), (1e9, -1.0), (f64::INFINITY, 1e9)] {
            assert_eq!(auto_frame_size(&base.with_links(w, r)).frame_size, equal);
        }
    }

    #[test]
    fn results_are_clamped_powers_of_two() {
        for size in [0, 1, 4095, MIB, 3 * MIB + 7, GIB, u64::MAX] {
            for k in [0.0, 1e-12, 0.2, 1.0, 3.0, 1e6, 1e300, f64::NAN, f64::INFINITY, -4.0] {
                let f = frame(size, k);
                assert!(f.is_power_of_two(), "{size} {k}: {f}");
                assert!((MIN_FRAME..=MAX_FRAME).contains(&f), "{size} {k}: {f}");
            }
        }
        // Write-only data gets the largest frame, but never more than the file needs.
        assert_eq!(frame(GIB, 0.0), MAX_FRAME);
        assert_eq!(frame(3 * MIB, 0.0), 4 << 20);
        assert_eq!(frame(1000, 0.0), MIN_FRAME);
        // Reads by the million: the smallest frame.
        assert_eq!(frame(GIB, 1e6), MIN_FRAME);
    }

    #[test]
    fn reads_per_write_0_1_10_differ_on_a_4_mib_file() {
        // The CLI test's file: 4 MiB, so K=0 -> the whole file, K=1 -> 128 KiB, K=10 -> 64 KiB.
        assert_eq!(frame(4 * MIB, 0.0), 4 << 20);
        assert_eq!(frame(4 * MIB, 1.0), 128 << 10);
        assert_eq!(frame(4 * MIB, 10.0), 64 << 10);
    }
}
