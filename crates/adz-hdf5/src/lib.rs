//! adz as an HDF5 filter: every chunk HDF5 hands the filter becomes one self-describing adz
//! frame (codec, level, filters, raw and payload checksums; chunks over 64 MiB become several
//! frames back to back), and a damaged chunk is an error, never wrong data.
//!
//! The plugin (`libadz_hdf5.so`, this crate's cdylib) exports `H5PLget_plugin_type` and
//! `H5PLget_plugin_info`, so HDF5 loads it from `HDF5_PLUGIN_PATH`; the Python module links
//! the same code and registers it with h5py's HDF5 (`adz.hdf5`). It links against no HDF5: the
//! few HDF5 functions `set_local` needs are looked up at run time (see [`h5`]).
//!
//! # Filter id
//!
//! [`FILTER_ID`] is 429 (0x1AD), in the range 256-511 that The HDF Group keeps for testing
//! filters without registration. It is not registered: a registered id is the step before
//! files written with it are shared widely.
//!
//! # `cd_values`
//!
//! Ten 32-bit words, the first a layout version; the user gives the first seven (fewer: the
//! rest are 0), `set_local` fills in the last three from the dataset.
//!
//! | word | meaning |
//! |---|---|
//! | 0 | layout version, [`CD_VERSION`] (1) |
//! | 1 | mode: 0 static, 1 throughput (S1), 2 keep-pace (S2), 3 prolong (S3), 4 archive |
//! | 2 | static: adz codec id (0 none, 1 lz4, 2 lz4hc, 3 zstd, 4 xz) |
//! | 3 | static: codec parameter (level; i32 as two's complement) |
//! | 4 | adaptive: link rate in kB/s (1000 bytes/s); 0: 1GbE (117 MB/s) |
//! | 5 | S3: the factor F × 1000 (1500: a write takes 1.5× the raw write) |
//! | 6 | filters: 0 auto (shuffle by element size for integers and floats), 1 none, 2 shuffle, 3 xor, 4 bitshuffle |
//! | 7 | element size in bytes (`set_local`) |
//! | 8 | HDF5 type class + 1 (`set_local`; 0 unknown) |
//! | 9 | chunk size in bytes (`set_local`; 0 unknown): a decoded chunk must have this length |
//!
//! No `cd_values` at all means static `zstd:3` with automatic filters.
//!
//! # Adaptive mode and parallelism
//!
//! HDF5 calls the filter one chunk at a time, from the thread that writes (H5Dwrite and
//! H5Dclose/flush of the chunk cache), so the chunks of a dataset are compressed one after the
//! other on one core. One controller per process and strategy (and link rate, and filter
//! choice) learns across the chunks of all datasets, with one model per class of data (the
//! entropy of a sample of what the codec sees), as the pipeline's `ClassedController` keeps.
//! It decides each chunk's codec with `next_block` and learns from the filter's own CPU time
//! per chunk with `record_block`, configured for one worker thread.
//! There is no sink to measure, so the link rate in `cd_values` is the link. The controller is
//! told the write is serial (`ControllerConfig::serial`): a chunk costs its compression plus
//! its write, `raw/S + stored/L`, so S1 minimises that sum rather than the pipeline's
//! `max(raw/S, stored/L)`, and S2/S3 aim at the serial write's time (docs/decisions/0047).

#[allow(unsafe_code)] // C callbacks over raw buffers; every unsafe block has a SAFETY note.
mod ffi;
pub mod h5;

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use adz_core::control::{
    classify, entropy, new_control, BlockContext, BlockMeasurement, Control, ControllerConfig,
    Decision, Link, Strategy,
};
use adz_core::format::{
    CodecId, CodecSpec, FilterId, FilterSpec, Filters, FrameHeader, FRAME_HEADER_LEN,
    MAX_FRAME_RAW_LEN,
};
use adz_core::{FrameDecoder, FrameEncoder};

pub use ffi::{adz_hdf5_init, last_error, H5PLget_plugin_info, H5PLget_plugin_type};

/// The HDF5 filter id: 429, in the range 256-511 reserved for testing (see the crate docs).
pub const FILTER_ID: u32 = 429;
/// The filter's name in HDF5 (`h5dump` shows it).
pub const FILTER_NAME: &str = "adz";
/// The version word of the `cd_values` layout this build writes and reads.
pub const CD_VERSION: u32 = 1;
/// Words of `cd_values` the user sets (version, mode, codec, level, link, factor, filters).
pub const CD_USER_WORDS: usize = 7;
/// Words of `cd_values` after `set_local`.
pub const CD_WORDS: usize = 10;
/// The link rate when the user gives none: 1GbE, as `adz` counts it (117 MB/s).
pub const DEFAULT_LINK: f64 = 117e6;
/// The largest chunk HDF5 allows (its chunk sizes are 32-bit).
const MAX_CHUNK: u64 = u32::MAX as u64;
/// A compressed chunk is kept only if at most this share of the raw size (the pipeline's
/// default); a static chunk that does not shrink is stored raw inside its frame.
const KEEP_RATIO: f64 = 0.97;

/// Errors of the filter. The C entry points turn them into a return of 0 (HDF5 then fails
/// the write or read); [`last_error`] keeps the message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `cd_values` (or options) that this build does not understand.
    #[error("bad adz filter parameters: {0}")]
    Params(String),
    /// A chunk that is not a sequence of valid adz frames.
    #[error("damaged adz chunk: {0}")]
    Damaged(String),
    /// Encoding or decoding a frame failed.
    #[error(transparent)]
    Core(#[from] adz_core::Error),
}

/// Result of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// How chunks are compressed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    /// Always this codec and level.
    Static(CodecSpec),
    /// An adz strategy (S1, S2, S3 or archive) through a link of this many bytes/s.
    Adaptive {
        /// The strategy.
        strategy: Strategy,
        /// Link rate, bytes/s.
        link: f64,
    },
}

/// Which byte filter runs before the codec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilterChoice {
    /// Shuffle by element size for integer and float types of 2..=255 bytes, else none.
    Auto,
    /// None.
    None,
    /// Shuffle by element size.
    Shuffle,
    /// XOR with the previous element (element-size wide).
    Xor,
    /// Bit planes by element size (Bitshuffle's transposition; elements of 1 byte too).
    Bitshuffle,
}

impl FilterChoice {
    /// Every choice.
    pub const ALL: [FilterChoice; 5] = [
        FilterChoice::Auto,
        FilterChoice::None,
        FilterChoice::Shuffle,
        FilterChoice::Xor,
        FilterChoice::Bitshuffle,
    ];

    /// The name users give it (`Adz(filters=...)`, [`Params::from_options`]).
    pub fn name(self) -> &'static str {
        match self {
            FilterChoice::Auto => "auto",
            FilterChoice::None => "none",
            FilterChoice::Shuffle => "shuffle",
            FilterChoice::Xor => "xor",
            FilterChoice::Bitshuffle => "bitshuffle",
        }
    }
}

/// The parameters a dataset's `cd_values` hold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Static codec or adaptive strategy.
    pub mode: Mode,
    /// The byte filter.
    pub filters: FilterChoice,
    /// Element size in bytes (0: unknown).
    pub elem_size: u32,
    /// HDF5 type class + 1 (0: unknown).
    pub type_class: u32,
    /// Chunk size in bytes (0: unknown).
    pub chunk_bytes: u32,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            mode: Mode::Static("zstd:3".parse().expect("a valid codec")),
            filters: FilterChoice::Auto,
            elem_size: 0,
            type_class: 0,
            chunk_bytes: 0,
        }
    }
}

/// HDF5's `H5T_INTEGER` and `H5T_FLOAT` type classes, + 1 as `cd_values` word 8 holds them.
const CLASS_INTEGER: u32 = 1;
const CLASS_FLOAT: u32 = 2;

impl Params {
    /// Parameters from options: `strategy` as adz spells it (`throughput`, `keep-pace`,
    /// `prolong=1.5`, `archive`, `static=zstd:3`), `link` a rate (`1GbE`, `500MB/s`),
    /// `filters` one of `auto`, `none`, `shuffle`, `xor`, `bitshuffle`.
    pub fn from_options(strategy: &str, link: &str, filters: &str) -> Result<Params> {
        let bad = |e: adz_core::open::ParseError| Error::Params(e.0);
        let strategy = adz_core::open::parse_strategy(strategy).map_err(bad)?;
        let mode = match strategy {
            Strategy::Static(c) => Mode::Static(c),
            s => {
                let link = match adz_core::open::parse_link(link).map_err(bad)? {
                    Link::Fixed(b) => b,
                    _ => {
                        return Err(Error::Params(format!(
                            "link {link:?}: an HDF5 filter has no sink to measure, give a rate \
                             such as 1GbE or 500MB/s"
                        )))
                    }
                };
                Mode::Adaptive { strategy: s, link }
            }
        };
        let name = filters.trim().to_ascii_lowercase();
        let Some(filters) = FilterChoice::ALL.into_iter().find(|f| f.name() == name) else {
            return Err(Error::Params(format!(
                "filters {name:?}: expected auto, none, shuffle, xor or bitshuffle"
            )));
        };
        let p = Params { mode, filters, ..Params::default() };
        // What cd_values cannot hold exactly is refused here rather than rounded silently.
        p.to_cd()?;
        Ok(p)
    }

    /// Parse `cd_values` (any length up to [`CD_WORDS`]; missing words are 0; none at all is
    /// the default, static `zstd:3`).
    pub fn from_cd(cd: &[u32]) -> Result<Params> {
        if cd.is_empty() {
            return Ok(Params::default());
        }
        if cd[0] != CD_VERSION {
            return Err(Error::Params(format!(
                "cd_values version {} (this build reads version {CD_VERSION})",
                cd[0]
            )));
        }
        if cd.len() > CD_WORDS {
            return Err(Error::Params(format!("{} cd_values, at most {CD_WORDS}", cd.len())));
        }
        let w = |i: usize| cd.get(i).copied().unwrap_or(0);
        let link = if w(4) == 0 { DEFAULT_LINK } else { f64::from(w(4)) * 1e3 };
        let adaptive = |strategy| Mode::Adaptive { strategy, link };
        let mode = match w(1) {
            0 => {
                let id = u8::try_from(w(2))
                    .ok()
                    .and_then(adz_core::format::CodecId::from_u8)
                    .ok_or_else(|| Error::Params(format!("unknown codec id {}", w(2))))?;
                let c =
                    CodecSpec::new(id, w(3) as i32).map_err(|e| Error::Params(e.to_string()))?;
                Mode::Static(c)
            }
            1 => adaptive(Strategy::Throughput),
            2 => adaptive(Strategy::KeepPace),
            3 => {
                let f = f64::from(w(5)) / 1e3;
                if f < 1.0 {
                    return Err(Error::Params(format!("prolong factor {f} (word 5 / 1000) < 1")));
                }
                adaptive(Strategy::Prolong(f))
            }
            4 => adaptive(Strategy::Archive),
            m => return Err(Error::Params(format!("unknown mode {m}"))),
        };
        let filters = match w(6) {
            0 => FilterChoice::Auto,
            1 => FilterChoice::None,
            2 => FilterChoice::Shuffle,
            3 => FilterChoice::Xor,
            4 => FilterChoice::Bitshuffle,
            f => return Err(Error::Params(format!("unknown filter choice {f}"))),
        };
        Ok(Params { mode, filters, elem_size: w(7), type_class: w(8), chunk_bytes: w(9) })
    }

    /// The `cd_values` words ([`CD_WORDS`] of them).
    pub fn to_cd(&self) -> Result<[u32; CD_WORDS]> {
        let mut cd = [0u32; CD_WORDS];
        cd[0] = CD_VERSION;
        let rate = |link: f64| {
            let k = (link / 1e3).round();
            if k >= 1.0 && k <= f64::from(u32::MAX) {
                Ok(k as u32)
            } else {
                Err(Error::Params(format!("link rate {link} B/s: must be 1 kB/s .. 4 TB/s")))
            }
        };
        match self.mode {
            Mode::Static(c) => {
                cd[2] = u32::from(c.id().as_u8());
                cd[3] = c.param() as u32;
            }
            Mode::Adaptive { strategy, link } => {
                cd[1] = match strategy {
                    Strategy::Throughput => 1,
                    Strategy::KeepPace => 2,
                    Strategy::Prolong(f) => {
                        cd[5] = (f * 1e3).round() as u32;
                        3
                    }
                    Strategy::Archive => 4,
                    Strategy::Static(c) => {
                        return Params { mode: Mode::Static(c), ..*self }.to_cd();
                    }
                    s => return Err(Error::Params(format!("strategy {s} has no cd_values form"))),
                };
                cd[4] = rate(link)?;
            }
        }
        cd[6] = match self.filters {
            FilterChoice::Auto => 0,
            FilterChoice::None => 1,
            FilterChoice::Shuffle => 2,
            FilterChoice::Xor => 3,
            FilterChoice::Bitshuffle => 4,
        };
        cd[7] = self.elem_size;
        cd[8] = self.type_class;
        cd[9] = self.chunk_bytes;
        Ok(cd)
    }

    /// The adz filters for this dataset's element size. Bytes are not shuffled or XORed;
    /// bit planes of bytes are asked for only by name (`bitshuffle`), so they get them.
    pub fn frame_filters(&self) -> Filters {
        let Ok(size) = u8::try_from(self.elem_size) else { return Filters::NONE };
        if size == 0 || (size == 1 && self.filters != FilterChoice::Bitshuffle) {
            return Filters::NONE;
        }
        let spec = match self.filters {
            FilterChoice::None => return Filters::NONE,
            FilterChoice::Auto => {
                if !matches!(self.type_class, CLASS_INTEGER | CLASS_FLOAT) {
                    return Filters::NONE;
                }
                FilterSpec::shuffle(size)
            }
            FilterChoice::Shuffle => FilterSpec::shuffle(size),
            FilterChoice::Xor => FilterSpec::xor(size),
            FilterChoice::Bitshuffle => FilterSpec::bitshuffle(size),
        };
        spec.and_then(|s| Filters::new(&[s])).unwrap_or(Filters::NONE)
    }
}

thread_local! {
    static ENCODER: RefCell<FrameEncoder> = RefCell::new(FrameEncoder::new());
    static DECODER: RefCell<FrameDecoder> = RefCell::new(FrameDecoder::new());
}

/// Compress one chunk into `out` (cleared first): one frame per 64 MiB of raw data. What the
/// filter does, one chunk at a time on the writing thread (adaptive: the serial objective).
pub fn encode_chunk(p: &Params, raw: &[u8], out: &mut Vec<u8>) -> Result<()> {
    encode_chunk_on(p, raw, out, 0)
}

/// [`encode_chunk`] for a writer that compresses chunks on `workers` threads while it writes
/// earlier ones (`adz.hdf5.write_chunks`): adaptive chunks get the process's controller for
/// that many workers, pipelined (0: the filter's serial one).
pub fn encode_chunk_on(p: &Params, raw: &[u8], out: &mut Vec<u8>, workers: usize) -> Result<()> {
    out.clear();
    let end = encode_chunk_at(p, raw, out, workers)?;
    out.truncate(end);
    Ok(())
}

/// [`encode_chunk_on`] into `out[..end]`, returning `end`. `out` is grown where it is short
/// and never shortened, and what lies past `end` is left over: a buffer kept across chunks is
/// not zeroed again for every chunk (decision 0025).
pub fn encode_chunk_at(p: &Params, raw: &[u8], out: &mut Vec<u8>, workers: usize) -> Result<usize> {
    if raw.is_empty() || raw.len() as u64 > MAX_CHUNK {
        return Err(Error::Params(format!("a chunk of {} bytes", raw.len())));
    }
    let filters = p.frame_filters();
    ENCODER.with(|enc| {
        let mut enc = enc.borrow_mut();
        let mut end = 0;
        for (i, piece) in raw.chunks(MAX_FRAME_RAW_LEN as usize).enumerate() {
            let offset = (i * MAX_FRAME_RAW_LEN as usize) as u64;
            let (codec, f, keep, key) = match p.mode {
                Mode::Static(c) => {
                    let f = if c == CodecSpec::NONE { Filters::NONE } else { filters };
                    (c, f, KEEP_RATIO, None)
                }
                Mode::Adaptive { strategy, link } => {
                    let how = Adaptive { strategy, link, workers, filters: p.filters };
                    let (codec, keep, key) = decide_adaptive(how, filters, piece, offset);
                    let f = if codec.codec == CodecSpec::NONE { Filters::NONE } else { filters };
                    (codec.codec, f, keep, Some((key, codec)))
                }
            };
            if key.is_some() {
                warm_up(&mut enc, piece, f, out, end)?;
            }
            let timed = encode_frame(&mut enc, piece, offset, (codec, f, keep), out, end)?;
            end = timed.end;
            if let Some((key, decision)) = key {
                record_adaptive(&key, decision, piece.len(), &timed.header, timed.wall, timed.cpu);
            }
        }
        Ok(end)
    })
}

/// A frame [`encode_frame`] wrote and how long it took.
struct Timed {
    header: FrameHeader,
    end: usize,
    wall: Duration,
    cpu: Duration,
}

/// Encode one frame into `out` from `start` (a raw one with its payload), timed.
fn encode_frame(
    enc: &mut FrameEncoder,
    piece: &[u8],
    offset: u64,
    (codec, filters, keep): (CodecSpec, Filters, f64),
    out: &mut Vec<u8>,
    start: usize,
) -> Result<Timed> {
    let cpu0 = cpu_time::ThreadTime::try_now().ok();
    let wall0 = Instant::now();
    let (header, payload_is_raw, mut end) =
        enc.encode_at(piece, offset, codec, filters, keep, out, start)?;
    if payload_is_raw {
        // A frame stored raw: its payload is the piece itself.
        if out.len() < end + piece.len() {
            out.resize(end + piece.len(), 0);
        }
        out[end..end + piece.len()].copy_from_slice(piece);
        end += piece.len();
    }
    let wall = wall0.elapsed();
    let cpu = cpu0.map_or(wall, |c| c.elapsed());
    Ok(Timed { header, end, wall, cpu })
}

thread_local! {
    /// The longest frame this thread's encoder and output buffer have been grown for.
    static WARMED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Before this thread times its first frame of a length: grow the encoder's filter buffer
/// and `out` to it, untimed. Their first growth faults in fresh pages, which made the first
/// adaptive chunk of a process compress at about half its speed (1.5 ms of lz4:1 took 3.1),
/// and on a chunk where compressing barely pays, serial S1 then went raw and measured again
/// only one chunk in 64.
fn warm_up(
    enc: &mut FrameEncoder,
    piece: &[u8],
    filters: Filters,
    out: &mut Vec<u8>,
    start: usize,
) -> Result<()> {
    let need = start + FRAME_HEADER_LEN + max_compressed_len(piece.len());
    if WARMED.get() >= need {
        return Ok(());
    }
    // Codec none with the filters runs them into the encoder's buffer and copies the result.
    enc.encode_at(piece, 0, CodecSpec::NONE, filters, 1.0, out, start)?;
    if out.len() < need {
        out.resize(need, 0);
    }
    WARMED.set(need);
    Ok(())
}

/// A bound on any codec's output for `len` bytes (lz4's and zstd's are about `len / 255`
/// over, xz's more on tiny inputs).
fn max_compressed_len(len: usize) -> usize {
    CodecId::ALL.iter().map(|&c| adz_core::codec::max_compressed_len(c, len)).max().unwrap_or(len)
}

/// Which of the process's controllers decides an adaptive chunk.
#[derive(Clone, Copy)]
struct Adaptive {
    strategy: Strategy,
    link: f64,
    /// Threads compressing while the writer writes (0: the filter, compress then write).
    workers: usize,
    /// The dataset's filter: byte planes and bit planes of one chunk are different data to
    /// the codec (zstd:1 stores the corpus' netCDF-4 file 1.66:1 byte-shuffled and 1.76:1
    /// bit-shuffled), so each filter learns its own rungs.
    filters: FilterChoice,
}

/// The codec the process's controller for (strategy, link, filter, workers) picks for one
/// frame, the keep threshold, and the controller's key for [`record_adaptive`].
fn decide_adaptive(
    how: Adaptive,
    filters: Filters,
    piece: &[u8],
    offset: u64,
) -> (Decision, f64, String) {
    let Adaptive { strategy, link, workers, filters: choice } = how;
    let choice = choice.name();
    let key = if workers == 0 {
        format!("{strategy}@{link} {choice}")
    } else {
        format!("{strategy}@{link} {choice} on {workers} workers")
    };
    // Datasets of one file differ as much as a pipeline's blocks do (sequential ids store
    // 1000:1, random momenta 1.07:1): one model per class of data, as the pipeline keeps.
    let class = chunk_class(piece, filters);
    let ctx = BlockContext { raw_offset: offset, raw_len: piece.len(), hints: &[], class };
    let mut all = lock_controllers();
    let ctl = all.entry(key.clone()).or_insert_with(|| {
        // The filter is one thread that compresses a chunk, then writes it: the serial
        // objective. Workers that compress while the writer writes are a pipeline.
        let mut cfg = if workers == 0 {
            ControllerConfig::new(strategy, Link::Fixed(link), 1).with_serial(true)
        } else {
            ControllerConfig::new(strategy, Link::Fixed(link), workers)
        };
        // The filter's own `filters` (cd_values: shuffle by element size) are what a chunk
        // goes through; the controller's choice of filters is not used here.
        cfg.auto_filters = false;
        new_control(cfg)
    });
    (ctl.next_block(&ctx), ctl.keep_threshold(), key)
}

/// The CPU and wall time of a compressed frame go back to the controller that decided it.
fn record_adaptive(
    key: &str,
    decision: Decision,
    raw_len: usize,
    h: &FrameHeader,
    wall: Duration,
    cpu: Duration,
) {
    if decision.codec == CodecSpec::NONE {
        return;
    }
    if let Some(ctl) = lock_controllers().get_mut(key) {
        ctl.record_block(&BlockMeasurement {
            decision,
            raw_len: raw_len as u64,
            stored_len: u64::from(h.stored_len),
            stored_raw: h.stored_raw(),
            wall,
            cpu,
        });
    }
}

/// Entropy bounds (bits per byte) between classes 1|2, 2|3 and 3|4, as adz-control's
/// `classify` draws them.
const CLASS_BOUNDS: [f64; 3] = [3.0, 6.0, 7.8];
/// Elements per sample window, and windows, of [`chunk_class`]'s look at a shuffled chunk.
const CLASS_WINDOW: usize = 64;
const CLASS_WINDOWS: usize = 16;

/// The class of a chunk (1 sparse ..= 4 random-looking) by the entropy of what the codec will
/// see. Unshuffled, `classify` of its bytes. Shuffled by element size, the mean entropy of the
/// byte planes over a sample of elements: a smooth float grid (planes of 0, 2, 7 and 8 bits:
/// 3.7:1 with lz4) and random floats (2, 7, 8, 8 bits: 1.07:1) look alike byte by byte but
/// not plane by plane. Bit planes are taken by their byte planes too: what separates the two
/// there separates them here.
fn chunk_class(piece: &[u8], filters: Filters) -> u8 {
    let elem = match filters.iter().next() {
        Some(f) if matches!(f.id(), FilterId::Shuffle | FilterId::Bitshuffle) => {
            usize::from(f.param())
        }
        _ => 0,
    };
    let n = piece.len().checked_div(elem).unwrap_or(0);
    if elem < 2 || n < CLASS_WINDOW * CLASS_WINDOWS {
        return classify(piece);
    }
    let stride = (n - CLASS_WINDOW) / (CLASS_WINDOWS - 1);
    let mut plane = Vec::with_capacity(CLASS_WINDOW * CLASS_WINDOWS);
    let mut sum = 0.0;
    for j in 0..elem {
        plane.clear();
        for w in 0..CLASS_WINDOWS {
            let first = w * stride;
            plane.extend((first..first + CLASS_WINDOW).map(|i| piece[i * elem + j]));
        }
        sum += entropy(&plane);
    }
    let h = sum / elem as f64;
    1 + CLASS_BOUNDS.iter().filter(|&&b| h >= b).count() as u8
}

/// One controller per process for each adaptive (strategy, link, filter): they learn across
/// the chunks of every dataset that uses them.
type Controllers = HashMap<String, Box<dyn Control + Send>>;

fn lock_controllers() -> MutexGuard<'static, Controllers> {
    static CONTROLLERS: std::sync::LazyLock<Mutex<Controllers>> =
        std::sync::LazyLock::new(|| Mutex::new(HashMap::new()));
    // A panic while holding the lock leaves a usable map (a controller mid-update at worst).
    CONTROLLERS.lock().unwrap_or_else(|p| p.into_inner())
}

/// One of the process's adaptive controllers, as [`controller_status`] lists them.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub struct ControllerInfo {
    /// Which controller: `strategy@link filters` (the link in bytes/s, the `filters` choice
    /// by name), and ` on N workers` for `write_chunks`' pipelined ones: datasets with the
    /// same strategy, link and filters share it.
    pub key: String,
    /// Its status line (strategy, rung, speed, ...).
    pub status: String,
    /// Chunk frames it has decided.
    pub chunks: u64,
}

/// Every adaptive controller this process has, by key.
pub fn controller_status() -> Vec<ControllerInfo> {
    let mut v: Vec<ControllerInfo> = lock_controllers()
        .iter()
        .map(|(key, c)| {
            let s = c.status();
            ControllerInfo { key: key.clone(), status: s.to_string(), chunks: s.blocks }
        })
        .collect();
    v.sort();
    v
}

/// The frames of an encoded chunk: their headers and where each payload starts.
pub fn chunk_frames(buf: &[u8]) -> Result<(Vec<(FrameHeader, usize)>, usize)> {
    let mut frames = Vec::new();
    let (mut pos, mut raw) = (0usize, 0u64);
    while pos < buf.len() {
        let n = frames.len() as u64;
        let h = FrameHeader::parse(&buf[pos..], n, pos as u64)
            .map_err(|e| Error::Damaged(e.to_string()))?;
        let payload = pos + FRAME_HEADER_LEN;
        let end = payload
            .checked_add(h.stored_len as usize)
            .filter(|e| *e <= buf.len())
            .ok_or_else(|| Error::Damaged(format!("frame {n} runs past the chunk's end")))?;
        // Frames must follow each other in raw order from 0: a frame moved, lost or repeated
        // would otherwise decode to wrong data with every checksum right.
        if h.raw_offset != raw {
            return Err(Error::Damaged(format!(
                "frame {n} starts at raw offset {} instead of {raw}",
                h.raw_offset
            )));
        }
        raw += u64::from(h.raw_len);
        if raw > MAX_CHUNK {
            return Err(Error::Damaged("more than 4 GiB of raw data in one chunk".into()));
        }
        frames.push((h, payload));
        pos = end;
    }
    if frames.is_empty() {
        return Err(Error::Damaged("an empty chunk".into()));
    }
    Ok((frames, raw as usize))
}

/// Decode the frames [`chunk_frames`] found in `buf` into `out` (exactly their raw length).
pub fn decode_frames(buf: &[u8], frames: &[(FrameHeader, usize)], out: &mut [u8]) -> Result<()> {
    DECODER.with(|dec| {
        let mut dec = dec.borrow_mut();
        for (n, (h, payload)) in frames.iter().enumerate() {
            let start = h.raw_offset as usize;
            let dst = out
                .get_mut(start..start + h.raw_len as usize)
                .ok_or_else(|| Error::Damaged(format!("frame {n} past the output")))?;
            let src = &buf[*payload..*payload + h.stored_len as usize];
            dec.decode(h, src, n as u64, (*payload - FRAME_HEADER_LEN) as u64, dst)?;
        }
        Ok(())
    })
}

/// Decode a whole chunk; `expect` is the chunk size `set_local` recorded (0: unknown).
pub fn decode_chunk(buf: &[u8], expect: u32) -> Result<Vec<u8>> {
    let (frames, raw) = chunk_frames(buf)?;
    check_len(raw, expect)?;
    let mut out = vec![0; raw];
    decode_frames(buf, &frames, &mut out)?;
    Ok(out)
}

/// A decoded chunk must be as long as the dataset's chunks, when `set_local` recorded that.
pub fn check_len(raw: usize, expect: u32) -> Result<()> {
    if expect != 0 && raw as u64 != u64::from(expect) {
        return Err(Error::Damaged(format!(
            "the frames hold {raw} bytes, the dataset's chunks {expect}"
        )));
    }
    Ok(())
}

/// A short description of each frame of an encoded chunk (`zstd:3 shuffle:4`), for tests and
/// tools: which codec the filter chose.
pub fn describe_chunk(buf: &[u8]) -> Result<Vec<String>> {
    Ok(chunk_frames(buf)?.0.iter().map(|(h, _)| h.describe()).collect())
}

#[cfg(test)]
mod tests;
