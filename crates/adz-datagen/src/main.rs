//! `adz-datagen KIND SIZE [SEED] > file`: write deterministic test data to stdout.

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 || args.iter().any(|a| a == "-h" || a == "--help") {
        eprintln!("usage: adz-datagen KIND SIZE_BYTES [SEED] > FILE\nkinds: text, doubles, random, sparse, mixed");
        return ExitCode::from(2);
    }
    let kind: adz_datagen::Kind = match args[0].parse() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("adz-datagen: {e}");
            return ExitCode::from(2);
        }
    };
    let (Ok(size), Ok(seed)) =
        (args[1].parse::<usize>(), args.get(2).map_or(Ok(1), |s| s.parse::<u64>()))
    else {
        eprintln!("adz-datagen: SIZE and SEED must be whole numbers");
        return ExitCode::from(2);
    };
    let mut out = std::io::stdout().lock();
    let chunk = 16 << 20;
    let mut done = 0;
    let mut part = 0u64;
    // Generate in chunks so memory stays small for large sizes; the seed advances per chunk.
    while done < size {
        let n = chunk.min(size - done);
        let data = adz_datagen::generate(kind, n, seed.wrapping_mul(1_000_003).wrapping_add(part));
        if let Err(e) = out.write_all(&data) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                return ExitCode::SUCCESS;
            }
            eprintln!("adz-datagen: {e}");
            return ExitCode::FAILURE;
        }
        done += n;
        part += 1;
    }
    ExitCode::SUCCESS
}
