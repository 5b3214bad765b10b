//! The BD-CATS-like reader of the tiers benchmark (docs/benchmarks/2026-11-28-tiers-s3):
//! reads some fields of each VPIC-like time step back, each field one range read, and prints
//! the bytes and wall seconds.
//!
//! ```sh
//! bdcats_read tiers t.toml STEPS FIELD_BYTES FIELD...   # datasets s0, s1, ... of the tiers
//! bdcats_read file s3://b/s1-STEP.adz STEPS FIELD_BYTES FIELD...   # adz files (STEP: the step)
//! ```

use std::time::Instant;

use adz_tier::{Tiered, TiersConfig};

type Error = Box<dyn std::error::Error>;

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 5 {
        return Err("usage: bdcats_read tiers|file TOML|PATTERN STEPS FIELD_BYTES FIELD...".into());
    }
    let steps: u64 = args[2].parse()?;
    let field: u64 = args[3].parse()?;
    let fields: Vec<u64> = args[4..].iter().map(|f| f.parse()).collect::<Result<_, _>>()?;
    let t0 = Instant::now();
    let mut bytes = 0u64;
    let tiers = match args[0].as_str() {
        "tiers" => Some(Tiered::open(TiersConfig::load(args[1].as_ref())?)?),
        "file" => None,
        other => return Err(format!("{other}: give tiers or file").into()),
    };
    for s in 0..steps {
        for &f in &fields {
            let got = match &tiers {
                Some(t) => t.reader(&format!("s{s}"))?.read_range(f * field, field)?,
                None => {
                    let path = args[1].replace("STEP", &s.to_string());
                    adz_core::open::open_reader(&path, Default::default())?
                        .read_range(f * field, field)?
                }
            };
            if got.len() as u64 != field {
                return Err(format!("step {s} field {f}: {} bytes", got.len()).into());
            }
            bytes += got.len() as u64;
        }
    }
    println!("{bytes} {:.3}", t0.elapsed().as_secs_f64());
    Ok(())
}
