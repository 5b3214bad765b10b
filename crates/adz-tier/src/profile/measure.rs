//! Measuring the machine for a [`Profile`]: every rung on each data set, on one thread and on
//! all cores, the predictor's accuracy, and each configured tier (see the parent module).

use std::time::Instant;

use adz_core::FrameEncoder;
use adz_format::{CodecSpec, Filters};
use adz_store::Storage;

use super::{PredictorReport, Profile, SetProfile, SetRung, TierProfile, PROFILE_VERSION};
use crate::config::{open_tier, TierConfig};
use crate::error::TierError;
use crate::predictor::{Accuracy, Features, Prediction, Predictor, Sample, Scratch};
use crate::tiered::KEEP_RATIO;

/// Bytes of data to measure, cut into blocks of the profile's block size.
#[derive(Debug, Clone)]
pub struct DataSet {
    /// Its name.
    pub name: String,
    /// Where it came from.
    pub source: String,
    /// The bytes.
    pub data: Vec<u8>,
}

/// What [`measure`] is doing, for a progress bar.
#[derive(Debug, Clone)]
pub struct Step<'a> {
    /// The data set.
    pub set: &'a str,
    /// The rung.
    pub rung: CodecSpec,
    /// `"1 thread"` or `"N threads"`.
    pub pass: String,
    /// Raw bytes just done.
    pub bytes: u64,
}

/// The raw bytes [`measure`] compresses in all: each set twice per rung.
pub fn work(sets: &[DataSet], rungs: &[CodecSpec]) -> u64 {
    sets.iter().map(|s| s.data.len() as u64).sum::<u64>() * rungs.len() as u64 * 2
}

fn frame_ratio(raw: usize, frame: usize) -> f64 {
    let payload = frame.saturating_sub(adz_format::FRAME_HEADER_LEN).max(1);
    (raw as f64 / payload as f64).max(1.0)
}

/// Measures every rung on every data set; see the module docs. `threads` is the all-core
/// pass's thread count; `progress` is called after each block or pass.
pub fn measure(
    sets: &[DataSet],
    rungs: &[CodecSpec],
    block_size: u32,
    threads: usize,
    progress: &mut dyn FnMut(Step<'_>),
) -> Result<Profile, TierError> {
    if rungs.is_empty() {
        return Err(TierError::Profile("no rungs to measure".into()));
    }
    if sets.iter().all(|s| s.data.is_empty()) {
        return Err(TierError::Profile("no data to measure".into()));
    }
    adz_format::FileHeader::new(block_size)
        .map_err(|e| TierError::Profile(format!("block size {block_size}: {e}")))?;
    let bs = block_size as usize;
    let threads = threads.max(1);
    let mut samples = Vec::new();
    let mut out_sets = Vec::new();
    let mut enc = FrameEncoder::new();
    let mut frame = Vec::with_capacity(bs + 4096);
    for set in sets {
        if set.data.is_empty() {
            continue;
        }
        let first = samples.len();
        for block in set.data.chunks(bs) {
            samples.push(Sample {
                set: out_sets.len(),
                class: adz_control::classify(block),
                raw: block.len() as u64,
                features: Features::of(block),
                ratio: Vec::with_capacity(rungs.len()),
                speed: Vec::with_capacity(rungs.len()),
            });
        }
        let mut set_rungs = Vec::new();
        for &rung in rungs {
            let (mut stored, mut secs) = (0f64, 0f64);
            for (k, block) in set.data.chunks(bs).enumerate() {
                frame.clear();
                let t0 = Instant::now();
                enc.encode(block, 0, rung, Filters::NONE, KEEP_RATIO, &mut frame)
                    .map_err(|e| TierError::Profile(format!("{rung} on {}: {e}", set.name)))?;
                let dt = t0.elapsed().as_secs_f64().max(1e-9);
                let ratio = frame_ratio(block.len(), frame.len());
                let s = &mut samples[first + k];
                s.ratio.push(ratio);
                s.speed.push(block.len() as f64 / dt);
                stored += block.len() as f64 / ratio;
                secs += dt;
                let pass = "1 thread".to_owned();
                progress(Step { set: &set.name, rung, pass, bytes: block.len() as u64 });
            }
            let raw = set.data.len() as f64;
            let all = all_cores(&set.data, bs, rung, threads)?;
            progress(Step {
                set: &set.name,
                rung,
                pass: format!("{threads} threads"),
                bytes: set.data.len() as u64,
            });
            set_rungs.push(SetRung {
                ratio: raw / stored,
                speed_one: raw / secs,
                speed_all: raw / all,
            });
        }
        let classes: Vec<u8> = samples[first..].iter().map(|s| s.class).collect();
        out_sets.push(SetProfile {
            name: set.name.clone(),
            source: set.source.clone(),
            raw: set.data.len() as u64,
            blocks: (samples.len() - first) as u64,
            class: most_common(&classes),
            rungs: set_rungs,
        });
    }
    let mut profile = Profile {
        version: PROFILE_VERSION,
        created: crate::tiered::now_secs(),
        adz: env!("CARGO_PKG_VERSION").to_owned(),
        threads,
        block_size,
        rungs: rungs.to_vec(),
        sets: out_sets,
        samples,
        tiers: Vec::new(),
        predictor: None,
        core_power: None,
    };
    profile.predictor = Some(predictor_report(&profile, sets)?);
    Ok(profile)
}

/// Wall seconds to encode all of `data` at `rung` on `threads` threads, each taking every
/// `threads`-th block: the best of as many rounds as fit in 50 ms (at least one), so that
/// the fast rungs, whose round takes about a millisecond, are not measured by one
/// scheduling hiccup of a shared machine.
fn all_cores(data: &[u8], bs: usize, rung: CodecSpec, threads: usize) -> Result<f64, TierError> {
    let started = Instant::now();
    let mut best = f64::INFINITY;
    while best.is_infinite() || started.elapsed().as_secs_f64() < 0.05 {
        best = best.min(all_cores_once(data, bs, rung, threads)?);
    }
    Ok(best)
}

fn all_cores_once(
    data: &[u8],
    bs: usize,
    rung: CodecSpec,
    threads: usize,
) -> Result<f64, TierError> {
    let t0 = Instant::now();
    let results: Vec<Result<(), TierError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|k| {
                s.spawn(move || {
                    let mut enc = FrameEncoder::new();
                    let mut frame = Vec::with_capacity(bs + 4096);
                    for block in data.chunks(bs).skip(k).step_by(threads) {
                        frame.clear();
                        enc.encode(block, 0, rung, Filters::NONE, KEEP_RATIO, &mut frame)
                            .map_err(|e| TierError::Profile(format!("{rung}: {e}")))?;
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    results.into_iter().collect::<Result<Vec<()>, _>>()?;
    Ok(t0.elapsed().as_secs_f64().max(1e-9))
}

fn most_common(classes: &[u8]) -> u8 {
    let mut count = [0usize; 256];
    for &c in classes {
        count[c as usize] += 1;
    }
    (0..=255u8).max_by_key(|&c| (count[c as usize], std::cmp::Reverse(c))).unwrap_or(0)
}

/// Held-out accuracy (each set predicted by a fit on the others) and predictions per second.
fn predictor_report(p: &Profile, sets: &[DataSet]) -> Result<PredictorReport, TierError> {
    let n_sets = p.sets.len();
    let (mut held_out, mut online) = (None, None);
    if n_sets >= 2 {
        let (mut off, mut on) = (Vec::new(), Vec::new());
        for s in 0..n_sets {
            let train: Vec<Sample> = p.samples.iter().filter(|x| x.set != s).cloned().collect();
            let test: Vec<&Sample> = p.samples.iter().filter(|x| x.set == s).collect();
            let fit = Predictor::fit(&train, p.rungs.len())?;
            off.push(Accuracy::score(&fit, &test, false));
            on.push(Accuracy::score(&fit, &test, true));
        }
        held_out = Some(Accuracy::pool(&off));
        online = Some(Accuracy::pool(&on));
    }
    let fit = Predictor::fit(&p.samples, p.rungs.len())?;
    Ok(PredictorReport {
        held_out,
        held_out_online: online,
        blocks_per_second: predictions_per_second(&fit, sets, p.block_size as usize),
    })
}

/// Blocks predicted per second on this thread: features of each block and every rung's
/// prediction, over the sets' blocks for at least 0.2 s.
pub fn predictions_per_second(p: &Predictor, sets: &[DataSet], bs: usize) -> f64 {
    let blocks: Vec<&[u8]> = sets.iter().flat_map(|s| s.data.chunks(bs.max(1))).collect();
    if blocks.is_empty() {
        return 0.0;
    }
    let mut scratch = Scratch::default();
    let mut out: Vec<Prediction> = Vec::with_capacity(p.rungs());
    let (mut n, t0) = (0u64, Instant::now());
    let mut sink = 0.0;
    while n < 1000 || t0.elapsed().as_secs_f64() < 0.2 {
        for b in &blocks {
            let f = Features::of_with(b, &mut scratch);
            p.predict_all(&f, &mut out);
            sink += out[0].ratio;
            n += 1;
        }
    }
    std::hint::black_box(sink);
    n as f64 / t0.elapsed().as_secs_f64()
}

/// Measures a configured tier: bandwidth from one object of `probe` bytes, latency from 8
/// objects of 4 KiB (the median, less their transfer time), each committed and deleted.
pub fn measure_tier(t: &TierConfig, probe: usize) -> Result<TierProfile, TierError> {
    // A throttled tier is measured through its throttle; "measure" is measured as it is.
    let mut probe_config = t.clone();
    if probe_config.bandwidth.is_none() {
        probe_config.bandwidth = Some(1.0);
        probe_config.throttle = false;
    }
    let (store, _) = open_tier(&probe_config)?;
    let what = format!("measuring tier {:?}", t.name);
    let name = ".adz-profile-probe";
    let data = vec![0x5au8; probe.max(1)];
    // A put that failed may still have landed (a request timed out after the store took it):
    // the probe is deleted whatever the put said.
    let timed_put = |bytes: &[u8]| -> Result<f64, TierError> {
        let t0 = Instant::now();
        let put = store.put(name, bytes);
        let secs = t0.elapsed().as_secs_f64();
        let deleted = store.delete(name);
        put.map_err(TierError::store(what.clone()))?;
        deleted.map_err(TierError::store(what.clone()))?;
        Ok(secs)
    };
    let bandwidth = data.len() as f64 / timed_put(&data)?.max(1e-9);
    let small = vec![0x5au8; 4096];
    let mut times = Vec::new();
    for _ in 0..8 {
        times.push(timed_put(&small)?);
    }
    times.sort_by(f64::total_cmp);
    let latency = (times[times.len() / 2] - small.len() as f64 / bandwidth).max(0.0);
    Ok(TierProfile { name: t.name.clone(), bandwidth, latency })
}
