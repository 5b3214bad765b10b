//! The markdown summary of a results CSV: per (dataset, link, workload) cell the best static
//! configuration in hindsight, S1/S2/S3 against it, against the oracle and against
//! `zstd --adapt`, the targets checked, and geometric means.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use adz_core::cost::{CostModel, Machine};

use crate::results::{
    is_sink, link_key, Row, KIND_ADAPTIVE, KIND_EXTERNAL, KIND_ORACLE, KIND_RAW, KIND_STATIC,
};

/// One cell's comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Dataset.
    pub dataset: String,
    /// Link, MB/s.
    pub link_mbs: f64,
    /// Workload.
    pub workload: String,
    /// Raw row's speed, MB/s.
    pub raw_mbs: Option<f64>,
    /// Best static configuration in hindsight (fastest; ties to the better ratio) and its row.
    pub best_static: Option<Row>,
    /// S1's row.
    pub s1: Option<Row>,
    /// S2's row.
    pub s2: Option<Row>,
    /// S3's row (the first `s3=`/`prolong=` row).
    pub s3: Option<Row>,
    /// The oracle's row (sync cells).
    pub oracle: Option<Row>,
    /// `zstd --adapt`'s row.
    pub zstd_adapt: Option<Row>,
}

impl Cell {
    /// S1 speed / best static speed (the issue asks >= 0.95).
    pub fn s1_vs_best(&self) -> Option<f64> {
        Some(self.s1.as_ref()?.write_mbs / self.best_static.as_ref()?.write_mbs)
    }

    /// S1 speed / oracle speed (the issue asks >= 0.9).
    pub fn s1_vs_oracle(&self) -> Option<f64> {
        Some(self.s1.as_ref()?.write_mbs / self.oracle.as_ref()?.write_mbs)
    }

    /// S1 speed / zstd --adapt speed (the issue asks >= 1.3 in geometric mean, at equal or
    /// better ratio).
    pub fn s1_vs_adapt(&self) -> Option<f64> {
        Some(self.s1.as_ref()?.write_mbs / self.zstd_adapt.as_ref()?.write_mbs)
    }

    /// The link speed the cell's targets are reckoned at, MB/s: its link, or at the real sink
    /// (which has no speed of its own) what the cell's raw row measured.
    pub fn target_link(&self) -> Option<f64> {
        if is_sink(self.link_mbs) {
            self.raw_mbs
        } else {
            Some(self.link_mbs)
        }
    }

    /// A row's duration over the target duration of a strategy that aims at `link_mbs` / F
    /// (S2: F = 1, S3: F given): 1.0 = exactly on target.
    pub fn on_target(row: &Row, factor: f64, link_mbs: f64) -> f64 {
        let target = row.bytes as f64 / (link_mbs * 1e6) * factor;
        row.seconds / target
    }

    /// The cell's link for the table: MB/s, or `sink`.
    fn link_column(&self) -> String {
        if is_sink(self.link_mbs) {
            "sink".to_owned()
        } else {
            self.link_mbs.to_string()
        }
    }
}

/// Group rows into cells, in first-seen order.
pub fn cells(rows: &[Row]) -> Vec<Cell> {
    let mut order = Vec::new();
    let mut by: BTreeMap<(String, u64, String), Vec<&Row>> = BTreeMap::new();
    for r in rows {
        let k = r.cell();
        if !by.contains_key(&k) {
            order.push(k.clone());
        }
        by.entry(k).or_default().push(r);
    }
    order
        .into_iter()
        .map(|k| {
            let rs = &by[&k];
            let find =
                |pred: &dyn Fn(&Row) -> bool| rs.iter().find(|r| pred(r)).map(|r| (*r).clone());
            let best_static = rs
                .iter()
                .filter(|r| r.kind == KIND_STATIC || r.kind == KIND_RAW)
                .max_by(|a, b| {
                    a.write_mbs.total_cmp(&b.write_mbs).then(a.ratio.total_cmp(&b.ratio))
                })
                .map(|r| (*r).clone());
            let first = rs[0];
            Cell {
                dataset: first.dataset.clone(),
                link_mbs: first.link_mbs,
                workload: first.workload.clone(),
                raw_mbs: find(&|r| r.kind == KIND_RAW).map(|r| r.write_mbs),
                best_static,
                s1: find(&|r| {
                    r.kind == KIND_ADAPTIVE && (r.config == "s1" || r.config == "throughput")
                }),
                s2: find(&|r| {
                    r.kind == KIND_ADAPTIVE && (r.config == "s2" || r.config == "keep-pace")
                }),
                s3: find(&|r| {
                    r.kind == KIND_ADAPTIVE
                        && (r.config.starts_with("s3") || r.config.starts_with("prolong"))
                        && !r.config.ends_with("-auto")
                }),
                oracle: find(&|r| r.kind == KIND_ORACLE),
                zstd_adapt: find(&|r| r.kind == KIND_EXTERNAL && r.config.contains("--adapt")),
            }
        })
        .collect()
}

/// Geometric mean of the values present; None if none are.
pub fn geomean(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    let v: Vec<f64> = values.into_iter().flatten().filter(|x| *x > 0.0).collect();
    (!v.is_empty()).then(|| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

fn f2(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.2}"))
}

fn speed_ratio(r: &Option<Row>) -> String {
    r.as_ref().map_or("-".into(), |r| format!("{:.0} ({:.2})", r.write_mbs, r.ratio))
}

fn s3_factor(r: &Row) -> f64 {
    r.config
        .split_once('=')
        .and_then(|(_, f)| f.trim_end_matches("-auto").parse().ok())
        .unwrap_or(1.5)
}

/// The markdown report.
pub fn markdown(rows: &[Row]) -> String {
    let cells = cells(rows);
    let mut s = String::new();
    let _ = writeln!(s, "# adz evaluation\n");
    let _ = writeln!(s, "Speeds in MB/s of raw data, ratio in parentheses. Targets (issue 5): S1/best >= 0.95 in every cell, S1/oracle >= 0.9, S1/zstd --adapt >= 1.3 in geometric mean at equal or better ratio.\n");
    let _ = writeln!(s, "| dataset | link | workload | raw | best static | S1 | S1/best | S1/oracle | S2 time/target | S3 time/target | zstd --adapt | S1/adapt | async share S1 |");
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for c in &cells {
        let best = c
            .best_static
            .as_ref()
            .map_or("-".into(), |b| format!("{} {:.0} ({:.2})", b.config, b.write_mbs, b.ratio));
        let mark = |v: Option<f64>, target: f64| match v {
            Some(x) if x < target => format!("**{x:.2}**"),
            other => f2(other),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            c.dataset,
            c.link_column(),
            c.workload,
            f2(c.raw_mbs).trim_end_matches(".00"),
            best,
            speed_ratio(&c.s1),
            mark(c.s1_vs_best(), 0.95),
            mark(c.s1_vs_oracle(), 0.9),
            // An async row's time includes the application's computing: no write target.
            f2(c.s2
                .as_ref()
                .filter(|r| r.workload == "sync")
                .zip(c.target_link())
                .map(|(r, l)| Cell::on_target(r, 1.0, l))),
            f2(c.s3
                .as_ref()
                .filter(|r| r.workload == "sync")
                .zip(c.target_link())
                .map(|(r, l)| Cell::on_target(r, s3_factor(r), l))),
            speed_ratio(&c.zstd_adapt),
            f2(c.s1_vs_adapt()),
            f2(c.s1.as_ref().and_then(|r| r.async_share)),
        );
    }
    let _ = writeln!(s, "\nBold: below the issue's target for that cell.\n");
    if cells.iter().any(|c| is_sink(c.link_mbs)) {
        let _ = writeln!(s, "Link `sink`: the real store of `--sink`, unthrottled; the adaptive rows measured it (`--link auto`), and S2/S3's targets are reckoned at its raw row's speed.\n");
    }
    let _ = writeln!(s, "## Geometric means\n");
    let _ = writeln!(s, "| measure | value | target |");
    let _ = writeln!(s, "|---|---|---|");
    let _ = writeln!(
        s,
        "| S1 / best static | {} | >= 1.0 (above the best static in hindsight) |",
        f2(geomean(cells.iter().map(Cell::s1_vs_best)))
    );
    let _ = writeln!(
        s,
        "| S1 / oracle | {} | >= 0.9 |",
        f2(geomean(cells.iter().map(Cell::s1_vs_oracle)))
    );
    let _ = writeln!(
        s,
        "| S1 / zstd --adapt (speed) | {} | >= 1.3 |",
        f2(geomean(cells.iter().map(Cell::s1_vs_adapt)))
    );
    let ratio_vs_adapt =
        geomean(cells.iter().map(|c| Some(c.s1.as_ref()?.ratio / c.zstd_adapt.as_ref()?.ratio)));
    let _ = writeln!(s, "| S1 / zstd --adapt (ratio) | {} | >= 1.0 |", f2(ratio_vs_adapt));
    let misses = cells.iter().filter(|c| c.s1_vs_best().is_some_and(|x| x < 0.95)).count();
    let with = cells.iter().filter(|c| c.s1_vs_best().is_some()).count();
    let _ = writeln!(s, "| cells with S1/best < 0.95 | {misses} of {with} | 0 |");
    // Cost of the adaptive rows (thesis 3.4/3.5 defaults; `adz cost --bench` for other inputs).
    let m = CostModel::default();
    let _ = writeln!(s, "\n## Cost (thesis 3.4 defaults, per GB of raw data)\n");
    let _ = writeln!(s, "| dataset | link | workload | strategy | ratio | compression cost | machine time saved | days to redeem |");
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|");
    let target_links: BTreeMap<(String, u64, String), f64> = cells
        .iter()
        .filter_map(|c| {
            Some(((c.dataset.clone(), link_key(c.link_mbs), c.workload.clone()), c.target_link()?))
        })
        .collect();
    for r in rows.iter().filter(|r| r.kind == KIND_ADAPTIVE && r.workload == "sync") {
        let gb = r.bytes as f64 / 1e9;
        // At the real sink: its raw row's speed (none measured yet: no cost line).
        let Some(&link) = target_links.get(&r.cell()) else { continue };
        let c = m.measured_write_cost(gb, link * 1e6, r.seconds, r.ratio);
        let per = |x: f64| if gb > 0.0 { x / gb } else { 0.0 };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.2} | {:.7} | {:.7} | {} |",
            r.dataset,
            if is_sink(r.link_mbs) { "sink".to_owned() } else { r.link_mbs.to_string() },
            r.workload,
            r.config,
            r.ratio,
            per(c.compression_cost),
            per(c.machine_savings),
            c.days_to_redeem.map_or("never".into(), |d| format!("{d:.1}")),
        );
    }
    let idle5 = m.compression_cost_per_gb(5.0, Machine::Idle);
    let _ = writeln!(s, "\nFor scale: 5 s of the whole machine per GB above idle costs {idle5:.6}; storing a GB for a year {:.4}.", m.storage_cost_per_gb_year());
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::row;

    fn sample() -> Vec<Row> {
        vec![
            row("text", 117.0, "sync", "none", KIND_RAW, 10.0, 1.0),
            row("text", 117.0, "sync", "lz4:1", KIND_STATIC, 5.0, 2.0),
            row("text", 117.0, "sync", "zstd:3", KIND_STATIC, 4.0, 3.0),
            row("text", 117.0, "sync", "xz:6", KIND_STATIC, 40.0, 4.0),
            row("text", 117.0, "sync", "s1", KIND_ADAPTIVE, 4.2, 2.9),
            row("text", 117.0, "sync", "s2", KIND_ADAPTIVE, 1e9 / 117e6, 3.2),
            row("text", 117.0, "sync", "s3=1.5", KIND_ADAPTIVE, 1.5e9 / 117e6 * 1.1, 3.5),
            row("text", 117.0, "sync", "zstd --adapt -T2 -c", KIND_EXTERNAL, 8.4, 3.0),
            row("text", 117.0, "sync", "oracle", KIND_ORACLE, 3.5, 3.0),
            row("text", 6000.0, "sync", "none", KIND_RAW, 1.0, 1.0),
            row("text", 6000.0, "sync", "lz4:1", KIND_STATIC, 1.0, 2.0),
            row("text", 6000.0, "sync", "s1", KIND_ADAPTIVE, 2.0, 1.5),
        ]
    }

    #[test]
    fn cells_pick_best_static_and_strategies() {
        let cs = cells(&sample());
        assert_eq!(cs.len(), 2);
        let c = &cs[0];
        assert_eq!(c.best_static.as_ref().unwrap().config, "zstd:3");
        assert!((c.s1_vs_best().unwrap() - 4.0 / 4.2).abs() < 1e-9);
        assert!((c.s1_vs_oracle().unwrap() - 3.5 / 4.2).abs() < 1e-9);
        assert!((c.s1_vs_adapt().unwrap() - 2.0).abs() < 1e-9);
        assert!((Cell::on_target(c.s2.as_ref().unwrap(), 1.0, 117.0) - 1.0).abs() < 1e-9);
        assert!((Cell::on_target(c.s3.as_ref().unwrap(), 1.5, 117.0) - 1.1).abs() < 1e-9);
        assert_eq!(c.target_link(), Some(117.0));
        // Ties in speed go to the better ratio: lz4:1 over raw at 6000 MB/s.
        assert_eq!(cs[1].best_static.as_ref().unwrap().config, "lz4:1");
        assert!(cs[1].oracle.is_none() && cs[1].s1_vs_oracle().is_none());
    }

    /// At the real sink the targets and the cost are reckoned at the raw row's speed, and the
    /// link column says `sink`.
    #[test]
    fn the_real_sink_is_reckoned_at_its_raw_speed() {
        use crate::results::SINK_LINK;
        let rows = vec![
            row("text", SINK_LINK, "sync", "none", KIND_RAW, 4.0, 1.0),
            row("text", SINK_LINK, "sync", "zstd:1", KIND_STATIC, 2.0, 3.0),
            // S2 at the raw row's 250 MB/s takes the raw time: on target.
            row("text", SINK_LINK, "sync", "s2", KIND_ADAPTIVE, 4.0, 3.5),
            row("text", SINK_LINK, "sync", "s1", KIND_ADAPTIVE, 2.5, 3.0),
        ];
        let cs = cells(&rows);
        assert_eq!(cs[0].target_link(), Some(250.0));
        assert!((Cell::on_target(cs[0].s2.as_ref().unwrap(), 1.0, 250.0) - 1.0).abs() < 1e-9);
        let md = markdown(&rows);
        // raw 250, best zstd:1, S1 400 MB/s (0.80 of it), no oracle, S2 on target, no S3.
        let line = "| text | sink | sync | 250 | zstd:1 500 (3.00) | 400 (3.00) | **0.80** | - | 1.00 | - | - | - | - |";
        assert!(md.contains(line), "{md}");
        assert!(md.contains("Link `sink`"), "{md}");
        assert!(md.contains("| text | sink | sync | s1 |"), "cost line: {md}");
        assert!(!md.contains("inf") && !md.contains("NaN"), "{md}");
    }

    #[test]
    fn geomean_skips_missing_values() {
        assert_eq!(geomean([Some(2.0), None, Some(8.0)]), Some(4.0));
        assert_eq!(geomean([None, None]), None);
    }

    #[test]
    fn markdown_marks_missed_targets() {
        let md = markdown(&sample());
        // text/117: S1/best = 0.95 (not a miss); text/6000: S1/best = 0.5 (a miss, bold).
        assert!(md.contains("| text | 117 | sync |"), "{md}");
        assert!(md.contains("**0.50**"), "{md}");
        assert!(md.contains("| cells with S1/best < 0.95 | 1 of 2 | 0 |"), "{md}");
        assert!(md.contains("| S1 / zstd --adapt (speed) | 2.00 |"), "{md}");
        assert!(md.contains("zstd:3 250 (3.00)"), "{md}");
    }
}
