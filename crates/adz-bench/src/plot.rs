//! PNG plots: the static sweep in the style of the thesis' figures 5.10-5.18, and a trace.
//!
//! Text is drawn with an embedded font (DejaVu Sans Mono, Bitstream Vera license, see
//! `assets/DejaVu-LICENSE.txt`) through plotters' ab_glyph backend, so plotting needs no
//! system fonts.

use std::path::{Path, PathBuf};
use std::sync::Once;

use adz_core::control::Ladder;
use adz_core::format::CodecSpec;
use anyhow::{anyhow, bail, Context, Result};
use plotters::prelude::*;
use serde::Deserialize;

use crate::report;
use crate::results::{Row, KIND_RAW, KIND_STATIC};

static FONT: &[u8] = include_bytes!("../assets/DejaVuSansMono.ttf");
static REGISTER: Once = Once::new();

fn font() {
    REGISTER.call_once(|| {
        // The font is a fixed, valid TTF: failure here is a build problem, reported when
        // drawing text fails.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("plotting failed: {e:?}")
}

/// One line of a `--trace` JSONL file (the fields the plot needs).
#[derive(Debug, Deserialize)]
pub struct TracePoint {
    /// Block number.
    pub seq: u64,
    /// Configuration chosen.
    pub config: String,
    /// The controller's aggregate speed estimate, MB/s.
    pub agg_speed_mbs: Option<f64>,
    /// Target, MB/s.
    pub target_mbs: Option<f64>,
    /// Link, MB/s.
    pub link_mbs: Option<f64>,
    /// Raw bytes.
    pub raw: u64,
    /// Stored bytes.
    pub stored: u64,
}

/// Read a trace file.
pub fn read_trace(path: &Path) -> Result<Vec<TracePoint>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut v = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        v.push(
            serde_json::from_str(line).with_context(|| {
                format!("{}: line {}: not a trace record", path.display(), i + 1)
            })?,
        );
    }
    if v.is_empty() {
        bail!("{} has no trace records", path.display());
    }
    Ok(v)
}

/// The ladder position of a trace's config (`zstd:3 shuffle:8` → zstd:3's rung).
fn rung(ladder: &Ladder, config: &str) -> usize {
    let codec = config.split_whitespace().next().unwrap_or("none");
    codec
        .parse::<CodecSpec>()
        .map_or(0, |c| ladder.position(c).unwrap_or_else(|| ladder.nearest(c)))
}

/// Plot a trace: top, the rung of every block on the standard ladder; bottom, the controller's
/// aggregate speed estimate, its target and the link, MB/s, and each block's compression
/// ratio on a second axis.
pub fn plot_trace(trace: &Path, out: &Path, title: &str) -> Result<()> {
    font();
    let pts = read_trace(trace)?;
    let ladder = Ladder::standard();
    let root = BitMapBackend::new(out, (1200, 800)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let root = root.titled(title, ("sans-serif", 22)).map_err(err)?;
    let (top, bottom) = root.split_vertically(360);
    let n = pts.len() as u64;
    let mut c = ChartBuilder::on(&top)
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(70)
        .build_cartesian_2d(0..n.max(1), 0..ladder.len())
        .map_err(err)?;
    let names: Vec<String> = ladder.rungs().iter().map(|r| r.to_string()).collect();
    c.configure_mesh()
        .x_desc("block")
        .y_desc("rung")
        .y_label_formatter(&|i| names.get(*i).cloned().unwrap_or_default())
        .draw()
        .map_err(err)?;
    c.draw_series(
        pts.iter().map(|p| Circle::new((p.seq, rung(&ladder, &p.config)), 2, BLUE.filled())),
    )
    .map_err(err)?;
    let max_speed = pts
        .iter()
        .flat_map(|p| [p.agg_speed_mbs, p.target_mbs, p.link_mbs])
        .flatten()
        .fold(1.0f64, f64::max)
        * 1.1;
    let max_ratio =
        pts.iter().map(|p| p.raw as f64 / p.stored.max(1) as f64).fold(1.0f64, f64::max) * 1.1;
    let mut c = ChartBuilder::on(&bottom)
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(70)
        .right_y_label_area_size(60)
        .build_cartesian_2d(0..n.max(1), 0.0..max_speed)
        .map_err(err)?
        .set_secondary_coord(0..n.max(1), 0.0..max_ratio);
    c.configure_mesh().x_desc("block").y_desc("MB/s").draw().map_err(err)?;
    c.configure_secondary_axes().y_desc("ratio").draw().map_err(err)?;
    let series = |f: fn(&TracePoint) -> Option<f64>| {
        pts.iter().filter_map(move |p| f(p).map(|v| (p.seq, v))).collect::<Vec<_>>()
    };
    c.draw_series(LineSeries::new(series(|p| p.agg_speed_mbs), &BLUE))
        .map_err(err)?
        .label("speed estimate")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE));
    c.draw_series(LineSeries::new(series(|p| p.target_mbs), &RED))
        .map_err(err)?
        .label("target")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED));
    c.draw_series(LineSeries::new(series(|p| p.link_mbs), &BLACK))
        .map_err(err)?
        .label("link")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK));
    c.draw_secondary_series(
        pts.iter().map(|p| {
            Circle::new((p.seq, p.raw as f64 / p.stored.max(1) as f64), 2, GREEN.filled())
        }),
    )
    .map_err(err)?
    .label("block ratio (right)")
    .legend(|(x, y)| Circle::new((x + 10, y), 3, GREEN.filled()));
    c.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

/// One sweep plot per (dataset, link, workload) cell into `dir`, in the style of the thesis'
/// figures 5.10-5.18: x the static configurations in ladder order, y the write speed (bars),
/// horizontal lines for raw, S1, S2, S3, the link and the oracle, the compression ratio of each
/// static configuration on the right axis. Returns the files written.
pub fn plot_sweeps(rows: &[Row], dir: &Path) -> Result<Vec<PathBuf>> {
    font();
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let ladder = Ladder::standard();
    let mut files = Vec::new();
    for cell in report::cells(rows) {
        let mut statics: Vec<&Row> = rows
            .iter()
            .filter(|r| {
                r.cell()
                    == (
                        cell.dataset.clone(),
                        (cell.link_mbs * 1000.0).round() as u64,
                        cell.workload.clone(),
                    )
            })
            .filter(|r| r.kind == KIND_STATIC || r.kind == KIND_RAW)
            .collect();
        if statics.is_empty() {
            continue;
        }
        // Ladder order; a rung not on the standard ladder (lz4:16) goes next to the nearest
        // one in speed, not to the end.
        statics.sort_by_key(|r| {
            r.config.parse::<CodecSpec>().map_or((usize::MAX, 0), |c| match ladder.position(c) {
                Some(p) => (p, 0),
                None => (ladder.nearest(c), 1),
            })
        });
        let sink = crate::results::is_sink(cell.link_mbs);
        let link = if sink { "sink".to_owned() } else { cell.link_mbs.to_string() };
        let file = dir.join(format!("{}-{link}-{}.png", cell.dataset, cell.workload));
        // The real sink's "link" is what its raw row measured.
        let mut lines: Vec<(String, f64, RGBColor)> = match cell.target_link() {
            Some(l) if sink => vec![("sink (raw)".into(), l, BLACK)],
            Some(l) => vec![("link".into(), l, BLACK)],
            None => vec![],
        };
        for (name, r, color) in [
            ("S1", &cell.s1, RED),
            ("S2", &cell.s2, BLUE),
            ("S3", &cell.s3, MAGENTA),
            ("oracle", &cell.oracle, CYAN),
        ] {
            if let Some(r) = r {
                lines.push((format!("{name} ({:.2})", r.ratio), r.write_mbs, color));
            }
        }
        let max_y = statics
            .iter()
            .map(|r| r.write_mbs)
            .chain(lines.iter().map(|l| l.1))
            .fold(1.0f64, f64::max)
            * 1.15;
        let max_ratio = statics.iter().map(|r| r.ratio).fold(1.0f64, f64::max) * 1.15;
        let k = statics.len();
        let root = BitMapBackend::new(&file, (1400, 700)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let title = format!(
            "{} at {}, {} write",
            cell.dataset,
            crate::results::link_label(cell.link_mbs),
            cell.workload
        );
        let mut c = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(10)
            .x_label_area_size(90)
            .y_label_area_size(70)
            .right_y_label_area_size(60)
            .build_cartesian_2d((0..k).into_segmented(), 0.0..max_y)
            .map_err(err)?
            .set_secondary_coord(0.0..k as f64, 0.0..max_ratio);
        let names: Vec<String> = statics.iter().map(|r| r.config.clone()).collect();
        c.configure_mesh()
            .disable_x_mesh()
            .x_labels(k.min(60))
            .x_label_formatter(&|x| match x {
                SegmentValue::CenterOf(i) => names.get(*i).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .x_label_style(("sans-serif", 11).into_font().transform(FontTransform::Rotate90))
            .y_desc("write speed, MB/s of raw data")
            .draw()
            .map_err(err)?;
        c.configure_secondary_axes().y_desc("compression ratio").draw().map_err(err)?;
        c.draw_series(statics.iter().enumerate().map(|(i, r)| {
            Rectangle::new(
                [(SegmentValue::Exact(i), 0.0), (SegmentValue::Exact(i + 1), r.write_mbs)],
                RGBColor(150, 180, 220).filled(),
            )
        }))
        .map_err(err)?;
        for (name, y, color) in lines {
            c.draw_series(LineSeries::new(
                [(SegmentValue::Exact(0), y), (SegmentValue::Last, y)],
                color.stroke_width(2),
            ))
            .map_err(err)?
            .label(name)
            .legend(move |(x, yy)| {
                PathElement::new(vec![(x, yy), (x + 20, yy)], color.stroke_width(2))
            });
        }
        c.draw_secondary_series(LineSeries::new(
            statics.iter().enumerate().map(|(i, r)| (i as f64 + 0.5, r.ratio)),
            GREEN.stroke_width(2),
        ))
        .map_err(err)?
        .label("ratio (right)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], GREEN.stroke_width(2)));
        c.configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
        drop(c);
        drop(root);
        files.push(file);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rung_of_trace_configs() {
        let l = Ladder::standard();
        assert_eq!(rung(&l, "none"), 0);
        assert_eq!(rung(&l, "zstd:3 shuffle:8"), 18);
        assert_eq!(rung(&l, "xz:9"), 47);
        assert_eq!(rung(&l, "garbage"), 0);
    }
}
