//! A progress bar on stderr, shown only when stderr is a terminal and the run is not quiet.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub fn bar(total: Option<u64>, quiet: bool, what: &str) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = match total {
        Some(n) => ProgressBar::new(n),
        None => ProgressBar::new_spinner(),
    };
    pb.set_draw_target(ProgressDrawTarget::stderr_with_hz(8));
    let template = if total.is_some() {
        "{prefix} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta} {msg}"
    } else {
        "{prefix} {spinner} {bytes} {bytes_per_sec} {msg}"
    };
    pb.set_style(
        ProgressStyle::with_template(template).expect("valid template").progress_chars("=> "),
    );
    pb.set_prefix(what.to_owned());
    pb
}
