//! The filter's encoding speed on chunks dumped to a file, one thread, as the filter runs:
//! `encode_speed FILE LAYOUT MODE...`, LAYOUT as `4f:56x1048576,8i:8x2097152` (element size,
//! `f` float or `i` integer, chunk count and bytes; the chunks lie back to back in FILE), MODE
//! a static codec (`lz4:1`, `zstd:1`, `none`). Prints MB/s (best of 5 passes) and ratio.

use std::time::Instant;

use adz_hdf5::{encode_chunk, FilterChoice, Mode, Params};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [file, layout, modes @ ..] = &args[..] else {
        return Err("usage: encode_speed FILE LAYOUT MODE...".into());
    };
    let data = std::fs::read(file)?;
    let mut chunks = Vec::new();
    let mut pos = 0;
    for group in layout.split(',') {
        let (kind, rest) = group.split_once(':').ok_or("layout")?;
        let (count, bytes) = rest.split_once('x').ok_or("layout")?;
        let class = if kind.ends_with('f') { 2 } else { 1 };
        let elem: u32 = kind.trim_end_matches(['f', 'i']).parse()?;
        for _ in 0..count.parse::<usize>()? {
            let n: usize = bytes.parse()?;
            chunks.push((elem, class, &data[pos..pos + n]));
            pos += n;
        }
    }
    let raw: usize = chunks.iter().map(|c| c.2.len()).sum();
    let mut out = Vec::new();
    for mode in modes {
        let (spec, filters) = match mode.strip_suffix(",noshuffle") {
            Some(s) => (s, FilterChoice::None),
            None => (mode.as_str(), FilterChoice::Auto),
        };
        let mode = Mode::Static(spec.parse()?);
        let (mut best, mut stored) = (f64::INFINITY, 0);
        for _ in 0..5 {
            let t = Instant::now();
            stored = 0;
            for &(elem_size, type_class, c) in &chunks {
                let p = Params { mode, filters, elem_size, type_class, chunk_bytes: 0 };
                encode_chunk(&p, c, &mut out)?;
                stored += out.len();
            }
            best = best.min(t.elapsed().as_secs_f64());
        }
        let (mbs, ratio) = (raw as f64 / best / 1e6, raw as f64 / stored as f64);
        println!("{mode:<24} {mbs:6.0} MB/s  ratio {ratio:.3}", mode = args_label(spec, filters));
    }
    Ok(())
}

fn args_label(spec: &str, f: FilterChoice) -> String {
    if f == FilterChoice::None {
        format!("{spec} (no shuffle)")
    } else {
        spec.to_owned()
    }
}
