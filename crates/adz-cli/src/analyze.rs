//! `adz analyze`: compressibility, zero blocks and deduplication of data the user owns,
//! before choosing anything (docs/LIFECYCLE.md).

use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::process::ExitCode;

use adz_core::analyze::{AnalyzeOptions, Analyzer, ENTRY_BYTES};
use adz_core::store::LinkSpeed;
use anyhow::{bail, Context, Result};
use clap::Args;

use crate::remote::{self, RangeReader, RemoteInput};

pub const AFTER_HELP: &str = "\
Compressibility is measured on a sample of each input (as `adz predict` takes it); zero
blocks and deduplication read every byte, with memory bounded by sampling chunk hashes. The
dedup table's memory assumes 64 bytes per distinct chunk (a 32-byte hash, an 8-byte location
and 24 bytes of table overhead). 'combined' multiplies the dedup ratio by zstd:3's ratio,
assuming distinct chunks compress as the whole data does.

Examples:
  adz analyze data.bin
  adz analyze --link 10GbE --json run1/*.bin
  adz analyze --plot report.svg data.bin s3://bucket/run1.bin
  tar c dir | adz analyze -";

#[derive(Args)]
pub struct AnalyzeArgs {
    /// Files or s3:// objects to analyse, or - for stdin.
    #[arg(required = true)]
    paths: Vec<String>,
    /// The link for the predicted write times: 1GbE, 10GbE, 500MB/s ...
    #[arg(short, long, default_value = "1GbE", value_name = "RATE")]
    link: LinkSpeed,
    /// Threads of the predicted write (default: one per core).
    #[arg(short = 'T', long, default_value_t = 0, value_name = "N")]
    threads: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Also draw the report as a chart: compressibility per rung, dedup ratio per chunk size.
    /// A PNG image if FILE ends in .png, else an SVG.
    #[arg(long, value_name = "FILE.svg|FILE.png")]
    plot: Option<std::path::PathBuf>,
}

pub fn run(a: AnalyzeArgs) -> Result<ExitCode> {
    let opts =
        AnalyzeOptions { link: a.link.bytes_per_sec(), threads: a.threads, ..Default::default() };
    let mut an = Analyzer::new(opts);
    let mut stdin_used = false;
    for p in &a.paths {
        if p == "-" {
            if stdin_used {
                bail!("- (stdin) given twice");
            }
            stdin_used = true;
            an.add_stream(&mut std::io::stdin().lock()).context("analysing stdin")?;
            continue;
        }
        if let Some((bucket, key)) = remote::s3_location(p)? {
            let input = remote::RemoteInput::open(p, &bucket, &key)?;
            let len = input.len();
            an.add_file(&mut ObjectFile::new(input), len)
                .with_context(|| format!("analysing {p}"))?;
            continue;
        }
        let mut f = std::fs::File::open(p).with_context(|| format!("cannot open {p}"))?;
        let meta = f.metadata().with_context(|| format!("cannot read {p}"))?;
        if meta.is_dir() {
            bail!("{p} is a directory; give files (e.g. {p}/*)");
        }
        an.add_file(&mut f, meta.len()).with_context(|| format!("analysing {p}"))?;
    }
    let r = an.report();
    if let Some(path) = &a.plot {
        plot::draw(&r, path).with_context(|| format!("cannot draw {}", path.display()))?;
    }
    let mut out = std::io::stdout().lock();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &r)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mb = |v: f64| v / 1e6;
    writeln!(out, "inputs:           {} ({} bytes)", r.inputs, r.bytes)?;
    writeln!(out, "zero 4K blocks:   {:.1} %", 100.0 * r.zero_block_share)?;
    writeln!(out, "sampled:          {} bytes for the rungs", r.sampled_bytes)?;
    writeln!(
        out,
        "\ncompressibility, write time at {:.0} MB/s (raw: {:.2} s)",
        mb(r.link),
        r.raw_write_seconds
    )?;
    writeln!(out, "{:<10} {:>8} {:>12} {:>12}", "rung", "ratio", "MB/s/thread", "write s")?;
    for g in &r.rungs {
        writeln!(
            out,
            "{:<10} {:>8.3} {:>12.1} {:>12.2}",
            g.codec,
            g.ratio,
            mb(g.speed),
            g.write_seconds
        )?;
    }
    writeln!(
        out,
        "\ndeduplication ({ENTRY_BYTES} bytes per table entry; combined = dedup x {})",
        r.combined_with.as_deref().unwrap_or("-")
    )?;
    writeln!(
        out,
        "{:<6} {:>7} {:>12} {:>10} {:>8} {:>14} {:>9} {:>8}",
        "chunks", "size", "chunks", "mean", "dedup", "table GB/TB", "combined", "sampled"
    )?;
    for d in &r.dedup {
        writeln!(
            out,
            "{:<6} {:>6}K {:>12} {:>10.0} {:>8.3} {:>14.2} {:>9} {:>8}",
            d.method,
            d.chunk_size >> 10,
            d.chunks,
            d.mean_chunk,
            d.dedup_ratio,
            d.table_bytes_per_tb / 1e9,
            d.combined_ratio.map_or("-".to_owned(), |c| format!("{c:.3}")),
            if d.sample_rate >= 1.0 {
                "all".to_owned()
            } else {
                format!("1/{:.0}", 1.0 / d.sample_rate)
            }
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// An s3:// object as the analyser reads it: the sample by ranged reads where it seeks, and
/// the whole object, read from its start, with several ranged requests in flight.
struct ObjectFile {
    input: RemoteInput,
    ranged: BufReader<RangeReader>,
    /// The read-ahead stream while reading on from the start.
    stream: Option<Box<dyn Read>>,
}

impl ObjectFile {
    fn new(input: RemoteInput) -> ObjectFile {
        ObjectFile { ranged: input.seekable(), input, stream: None }
    }
}

impl Read for ObjectFile {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match &mut self.stream {
            Some(s) => s.read(buf),
            None => self.ranged.read(buf),
        }
    }
}

impl Seek for ObjectFile {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        if to == SeekFrom::Start(0) {
            self.stream = Some(self.input.reader());
            return Ok(0);
        }
        // Leaving the stream: the ranged reader takes over (where the stream was is not
        // needed: the analyser seeks only to sample places and back to the start).
        self.stream = None;
        self.ranged.seek(to)
    }
}

/// `--plot`: the report as an SVG or PNG chart (plotters), two panels side by side.
mod plot {
    use std::path::Path;
    use std::sync::Once;

    use adz_core::analyze::AnalyzeReport;
    use anyhow::{anyhow, bail, Result};
    use plotters::prelude::*;

    /// The series names, as the legends show them (tests look for them).
    pub const RATIO: &str = "compression ratio";
    /// Fixed-size chunks.
    pub const FIXED: &str = "dedup, fixed-size chunks";
    /// Content-defined chunks.
    pub const CDC: &str = "dedup, FastCDC chunks";

    /// Text is laid out with an embedded font (DejaVu Sans Mono, Bitstream Vera license,
    /// crates/adz-bench/assets), so no system fonts are needed.
    static FONT: &[u8] = include_bytes!("../../adz-bench/assets/DejaVuSansMono.ttf");
    static REGISTER: Once = Once::new();

    fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
        anyhow!("plotting failed: {e:?}")
    }

    /// The chart's size, pixels.
    pub const SIZE: (u32, u32) = (1200, 500);

    /// Draw `r` into `path`, a PNG if its name ends in `.png` (any case), else an SVG: ratio
    /// per rung (left), dedup ratio per chunk size (right).
    pub fn draw(r: &AnalyzeReport, path: &Path) -> Result<()> {
        REGISTER.call_once(|| {
            // A fixed, valid TTF: a failure shows as an error when text is drawn.
            let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
        });
        if r.rungs.is_empty() && r.dedup.is_empty() {
            bail!("nothing to plot (no data)");
        }
        let png = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("png"));
        if png {
            panels(r, BitMapBackend::new(path, SIZE).into_drawing_area())
        } else {
            panels(r, SVGBackend::new(path, SIZE).into_drawing_area())
        }
    }

    fn panels<DB: DrawingBackend>(
        r: &AnalyzeReport,
        root: DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE).map_err(err)?;
        let (left, right) = root.split_horizontally(600);
        rungs(r, &left)?;
        dedup(r, &right)?;
        root.present().map_err(err)
    }

    fn rungs<DB: DrawingBackend>(
        r: &AnalyzeReport,
        area: &DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let top = r.rungs.iter().map(|g| g.ratio).fold(1.0, f64::max) * 1.1;
        let n = r.rungs.len().max(1);
        let mut chart = ChartBuilder::on(area)
            .caption("compressibility per rung", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(60)
            .y_label_area_size(50)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0.0f64..top)
            .map_err(err)?;
        let names: Vec<String> = r.rungs.iter().map(|g| g.codec.clone()).collect();
        chart
            .configure_mesh()
            .x_labels(n)
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    names.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .x_label_style(("sans-serif", 11).into_font().transform(FontTransform::Rotate90))
            .y_desc("raw / stored")
            .draw()
            .map_err(err)?;
        let points: Vec<(f64, f64)> =
            r.rungs.iter().enumerate().map(|(i, g)| (i as f64, g.ratio)).collect();
        chart
            .draw_series(LineSeries::new(points.iter().copied(), BLUE.stroke_width(2)))
            .map_err(err)?
            .label(RATIO)
            .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLUE.stroke_width(2)));
        chart.draw_series(points.iter().map(|p| Circle::new(*p, 3, BLUE.filled()))).map_err(err)?;
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(err)
    }

    fn dedup<DB: DrawingBackend>(
        r: &AnalyzeReport,
        area: &DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let top = r.dedup.iter().map(|d| d.dedup_ratio).fold(1.0, f64::max) * 1.1;
        let kib = |d: &adz_core::analyze::DedupReport| (d.chunk_size as f64 / 1024.0).log2();
        let (lo, hi) = r
            .dedup
            .iter()
            .map(kib)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| (l.min(x), h.max(x)));
        let (lo, hi) = if lo.is_finite() { (lo - 0.5, hi + 0.5) } else { (0.0, 1.0) };
        let mut chart = ChartBuilder::on(area)
            .caption("deduplication per chunk size", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(lo..hi, 0.0f64..top)
            .map_err(err)?;
        chart
            .configure_mesh()
            // Ticks only at whole powers of two (4K, 8K, 16K, ...), the sizes measured.
            .x_labels(((hi - lo).ceil() as usize + 1) * 2)
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 {
                    format!("{:.0}K", i.exp2())
                } else {
                    String::new()
                }
            })
            .x_desc("chunk size (average for FastCDC)")
            .y_desc("all bytes / distinct bytes")
            .draw()
            .map_err(err)?;
        for (method, name, color) in [("fixed", FIXED, RED), ("cdc", CDC, GREEN)] {
            let points: Vec<(f64, f64)> = r
                .dedup
                .iter()
                .filter(|d| d.method == method)
                .map(|d| (kib(d), d.dedup_ratio))
                .collect();
            chart
                .draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)))
                .map_err(err)?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2))
                });
            chart
                .draw_series(points.iter().map(|p| Circle::new(*p, 3, color.filled())))
                .map_err(err)?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(err)
    }
}
