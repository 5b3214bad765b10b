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
        (args[1].parse::<u64>(), args.get(2).map_or(Ok(1), |s| s.parse::<u64>()))
    else {
        eprintln!("adz-datagen: SIZE and SEED must be whole numbers");
        return ExitCode::from(2);
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match adz_datagen::write_to(kind, size, seed, &mut out).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("adz-datagen: {e}");
            ExitCode::FAILURE
        }
    }
}
