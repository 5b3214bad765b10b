//! `adz decompress`: an adz file or stream back to its raw bytes.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Result};
use clap::Args;

use crate::compress::same_file;
use crate::io::{Input, Output};
use crate::{read, CommonOut};

#[derive(Args)]
pub(crate) struct DecompressArgs {
    /// adz file to decompress, or - for stdin.
    #[arg(default_value = "-")]
    pub(crate) input: String,
    /// Output file, or - for stdout. Default: INPUT without .adz, or stdout when reading stdin.
    pub(crate) output: Option<String>,
    #[command(flatten)]
    pub(crate) common: CommonOut,
    #[command(flatten)]
    pub(crate) tier: crate::tier::TierFlag,
    #[command(flatten)]
    pub(crate) read: read::ReadArgs,
}

pub(crate) fn decompress(a: DecompressArgs) -> Result<ExitCode> {
    let input = Input::open(&a.input)?;
    let out_arg = match (&a.output, &input) {
        (Some(o), _) => o.clone(),
        (None, Input::Stdin) => "-".to_owned(),
        (None, Input::File { path, .. }) => {
            match path.to_str().and_then(|p| p.strip_suffix(".adz")) {
                Some(stem) if !stem.is_empty() => stem.to_owned(),
                _ => bail!(
                "cannot name the output: {} does not end in .adz; give OUTPUT (or - for stdout)",
                path.display()
            ),
            }
        }
        (None, Input::Remote(r)) => match r.url().strip_suffix(".adz") {
            Some(stem) => stem.to_owned(),
            None => bail!("cannot name the output: {} does not end in .adz; give OUTPUT", r.url()),
        },
    };
    if same_file(&input, &out_arg) {
        bail!("input and output are the same file: {out_arg}");
    }
    let started = Instant::now();
    let mut output = Output::create(&out_arg, a.common.force)?;
    let stats = read::decompress_to(&input, &mut output, &a.read, a.common.quiet)?;
    let out_name = output.describe();
    output.commit()?;
    if !a.common.quiet && out_arg != "-" {
        let secs = started.elapsed().as_secs_f64();
        eprintln!(
            "{} -> {}: {} frames, {} bytes, {:.2} s, {:.1} MB/s",
            input.describe(),
            out_name,
            stats.frames,
            stats.raw_bytes,
            secs,
            stats.raw_bytes as f64 / secs.max(1e-9) / 1e6
        );
    }
    Ok(ExitCode::SUCCESS)
}
