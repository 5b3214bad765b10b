//! Extrapolating an S2/S3 start past the costliest rung measured, when every measured rung
//! is faster than the strategy's target.

use adz_control::Ladder;
use adz_format::CodecSpec;

use super::choose::{Ask, Measured};
use super::{estimate, Predictor, RungPerf, EXTRAPOLATE_STEPS};

impl Predictor {
    /// S2/S3 with every measured rung short of the target: a start a few steps past the
    /// costliest measured rung that saves (the furthest down the ladder), along that rung's
    /// codec only ([`EXTRAPOLATE_STEPS`]), predicted from the priors scaled to that
    /// rung's measured speed, with the best measured ratio (no better: reference ratios do
    /// not carry over to data unlike the reference's). The table's shape holds within a
    /// codec on nearby levels, not across codecs (docs/PREDICTOR.md has the figures). The
    /// start and its guessed performance; None: no such start.
    pub(super) fn extrapolate(
        &self,
        ask: &Ask<'_>,
        m: &Measured,
        link: f64,
    ) -> Option<(CodecSpec, RungPerf)> {
        let keep = self.cfg.keep_threshold;
        let best = m.perfs.iter().map(|p| p.ratio).fold(1.0, f64::max);
        let ladder = Ladder::standard();
        let (from, perf) = m
            .rungs
            .iter()
            .zip(&m.perfs)
            .filter(|(_, p)| estimate::saves(**p, keep) && p.speed > 0.0)
            .filter_map(|(r, p)| ladder.position(r.spec).map(|i| (i, r, p)))
            .max_by_key(|&(i, _, _)| i)
            .map(|(_, r, p)| (r, p))?;
        let priors = &self.cfg.priors;
        let level = perf.speed / priors.get(from.spec).speed;
        let further: Vec<CodecSpec> = ladder
            .position(from.spec)
            .map(|i| {
                ladder.rungs()[i + 1..]
                    .iter()
                    .take(EXTRAPOLATE_STEPS)
                    .take_while(|c| c.id() == from.spec.id())
                    .copied()
                    .collect()
            })
            .unwrap_or_default();
        let guesses: Vec<RungPerf> =
            further.iter().map(|&c| RungPerf::new(priors.get(c).speed * level, best)).collect();
        let i =
            estimate::extrapolate_start(ask.strategy, ask.model, &m.perfs, &guesses, link, keep)?;
        Some((further[i], guesses[i]))
    }
}
