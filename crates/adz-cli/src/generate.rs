//! `adz generate`: the man pages and shell completions, rendered from the same clap definitions
//! that parse the command line, so they cannot drift from it (`make install` installs them).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use clap_complete::Shell;

#[derive(Args)]
pub struct GenerateArgs {
    /// What to generate.
    #[arg(value_enum)]
    what: What,
    /// Write here instead of stdout: for `man`, a directory that gets adz.1 and one page per
    /// subcommand (adz-compress.1, ...); for a completion, the script's file.
    #[arg(short, long, value_name = "PATH")]
    output: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum What {
    /// The roff man page adz.1.
    Man,
    /// Completions for bash.
    CompleteBash,
    /// Completions for zsh.
    CompleteZsh,
    /// Completions for fish.
    CompleteFish,
    /// Completions for PowerShell.
    CompletePowershell,
    /// Completions for elvish.
    CompleteElvish,
}

/// Render `what` for the command line `cmd` (the `adz` parser).
pub fn run(a: GenerateArgs, mut cmd: clap::Command) -> Result<ExitCode> {
    let shell = match a.what {
        What::Man => return man(cmd, a.output).map(|()| ExitCode::SUCCESS),
        What::CompleteBash => Shell::Bash,
        What::CompleteZsh => Shell::Zsh,
        What::CompleteFish => Shell::Fish,
        What::CompletePowershell => Shell::PowerShell,
        What::CompleteElvish => Shell::Elvish,
    };
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "adz", &mut buf);
    emit(&buf, a.output).map(|()| ExitCode::SUCCESS)
}

fn man(cmd: clap::Command, dir: Option<PathBuf>) -> Result<()> {
    let Some(dir) = dir else {
        let mut buf = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut buf)?;
        return emit(&buf, None);
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let cmd = cmd.name("adz");
    let mut pages = vec![(String::from("adz"), cmd.clone())];
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = format!("adz-{}", sub.get_name());
        pages.push((name.clone(), sub.clone().name(name)));
    }
    for (name, page) in pages {
        let mut buf = Vec::new();
        clap_mangen::Man::new(page).render(&mut buf)?;
        let path = dir.join(format!("{name}.1"));
        std::fs::write(&path, buf).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

fn emit(buf: &[u8], path: Option<PathBuf>) -> Result<()> {
    match path {
        Some(p) => std::fs::write(&p, buf).with_context(|| format!("writing {}", p.display())),
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(buf)?;
            Ok(out.flush()?)
        }
    }
}
