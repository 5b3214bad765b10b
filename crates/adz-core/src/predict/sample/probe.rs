//! Probing the data for its kinds: entropy classes at spread windows, an eighth of them
//! first, all of them only if those see more than one kind.

use std::borrow::Cow;
use std::time::Instant;

use adz_control::classify;

use super::{SampleConfig, ENTROPY_SPREAD, PROBE_FIRST, PROBE_LEN};
use crate::Result;

/// Bytes classified to take a sample, and the seconds it took.
#[derive(Debug, Default)]
pub(super) struct Look {
    pub(super) seconds: f64,
    pub(super) bytes: u64,
}

/// What the probes found.
pub(super) struct Probed {
    /// `(offset, class)` of every probe looked at, in offset order.
    pub(super) probes: Vec<(u64, u8)>,
    /// For data of several kinds, the spread of the entropy within each kind; None: one kind.
    pub(super) spread: Option<f64>,
    /// True if the probes saw several kinds of data.
    pub(super) mixed: bool,
}

/// Probe `source_len` bytes (standing for `data_len`) read by `read`. Every `PROBE_FIRST`-th
/// probe first: if they all see one kind of data and the entropy of their bytes hardly varies,
/// the rest are not looked at, so data of one kind pays an eighth of the probes.
pub(super) fn probe<'a>(
    cfg: &SampleConfig,
    source_len: u64,
    data_len: u64,
    read: &mut impl FnMut(u64, usize, bool) -> Result<(Cow<'a, [u8]>, f64)>,
    look: &mut Look,
) -> Result<Probed> {
    let offsets = cfg.probe_plan(source_len, data_len);
    let mut classes: Vec<Option<u8>> = vec![None; offsets.len()];
    let first = if offsets.len() / PROBE_FIRST >= 2 { PROBE_FIRST } else { 1 };
    let mut entropies: Vec<(u8, f64)> = Vec::new();
    for (i, &off) in offsets.iter().enumerate().step_by(first) {
        let (bytes, _) = read(off, PROBE_LEN, false)?;
        let t = Instant::now();
        // A probe is no longer than classify's sample: its class is its entropy's.
        let entropy = adz_control::entropy(&bytes);
        let class = adz_control::class_of(entropy);
        classes[i] = Some(class);
        entropies.push((class, entropy));
        look.seconds += t.elapsed().as_secs_f64();
        look.bytes += bytes.len() as u64;
    }
    let all: Vec<f64> = entropies.iter().map(|e| e.1).collect();
    let one = entropies.first().map(|e| e.0);
    let mixed = !offsets.is_empty()
        && (entropies.iter().any(|e| Some(e.0) != one) || spread(&all) > ENTROPY_SPREAD);
    // Several kinds, each alike within itself (datagen's `mixed`): a few long slices, at
    // least one per kind. Kinds that vary within themselves (a source tar's text): many.
    let spread = mixed.then(|| within_spread(&entropies));
    if mixed {
        for (i, &off) in offsets.iter().enumerate() {
            if classes[i].is_none() {
                let (bytes, _) = read(off, PROBE_LEN, false)?;
                let t = Instant::now();
                classes[i] = Some(classify(&bytes));
                look.seconds += t.elapsed().as_secs_f64();
                look.bytes += bytes.len() as u64;
            }
        }
    }
    let probes: Vec<(u64, u8)> =
        offsets.iter().zip(&classes).filter_map(|(&o, c)| c.map(|c| (o, c))).collect();
    Ok(Probed { probes, spread, mixed })
}

/// The standard deviation of `xs` (0 for fewer than two).
fn spread(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    (xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / xs.len() as f64).sqrt()
}

/// The pooled standard deviation of the entropies within each class: `(class, entropy)`.
fn within_spread(xs: &[(u8, f64)]) -> f64 {
    let mut sum_sq = 0.0;
    let mut n = 0usize;
    let mut classes: Vec<u8> = xs.iter().map(|x| x.0).collect();
    classes.sort_unstable();
    classes.dedup();
    for c in classes {
        let v: Vec<f64> = xs.iter().filter(|x| x.0 == c).map(|x| x.1).collect();
        sum_sq += spread(&v).powi(2) * v.len() as f64;
        n += v.len();
    }
    if n == 0 {
        0.0
    } else {
        (sum_sq / n as f64).sqrt()
    }
}

/// `(class, share)` of the probes, by class.
pub(super) fn kinds(probes: &[(u64, u8)]) -> Vec<(u8, f64)> {
    let mut out: Vec<(u8, f64)> = Vec::new();
    for &(_, c) in probes {
        match out.iter_mut().find(|k| k.0 == c) {
            Some(k) => k.1 += 1.0,
            None => out.push((c, 1.0)),
        }
    }
    out.sort_by_key(|k| k.0);
    for k in &mut out {
        k.1 /= probes.len() as f64;
    }
    out
}
