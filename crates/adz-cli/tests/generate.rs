//! `adz generate`: man pages and completions come from the parser itself.

use std::process::Command;

fn adz(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_adz")).args(args).output().expect("run adz")
}

fn stdout_of(args: &[&str]) -> String {
    let out = adz(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn the_man_page_lists_every_subcommand() {
    let man = stdout_of(&["generate", "man"]);
    assert!(man.starts_with(".ie") || man.contains(".TH adz"), "{}", &man[..200.min(man.len())]);
    for sub in ["compress", "decompress", "inspect", "verify", "cat", "recover", "predict", "cost"]
    {
        assert!(man.contains(sub), "adz.1 lacks {sub}");
    }
}

#[test]
fn man_pages_go_to_a_directory_one_per_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    stdout_of(&["generate", "man", "-o", d]);
    let compress = std::fs::read_to_string(dir.path().join("adz-compress.1")).unwrap();
    assert!(compress.contains(".TH adz-compress"), "{compress}");
    // The page carries the flags' help, straight from the clap definitions.
    assert!(compress.contains("throughput") && compress.contains("\\-\\-strategy"), "{compress}");
    assert!(dir.path().join("adz.1").is_file());
    assert!(!dir.path().join("adz-help.1").exists(), "no page for the help subcommand");
}

#[test]
fn completions_know_the_flags() {
    let bash = stdout_of(&["generate", "complete-bash"]);
    assert!(bash.contains("complete -F") && bash.contains("--strategy"), "bash");
    let zsh = stdout_of(&["generate", "complete-zsh"]);
    assert!(zsh.starts_with("#compdef adz"), "zsh");
    let fish = stdout_of(&["generate", "complete-fish"]);
    assert!(fish.contains("complete -c adz") && fish.contains("-l strategy"), "fish");
}

#[test]
fn an_unknown_kind_is_a_usage_error() {
    let out = adz(&["generate", "manual"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("complete-bash"), "lists the choices");
}
