//! `--check DIR`: the checker on a finished campaign's logs, and the leak
//! check when a server is given.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use zk_campaign::checker::check_dir;

use crate::cli::Opts;
use crate::leaks::{check_leaks, print_leaks};

pub(crate) fn check_main(dir: &Path, connect: Option<&str>, o: &Opts) -> ExitCode {
    let report = match check_dir(dir, &o.check) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("zk-campaign: cannot read {}: {e}", dir.display());
            return ExitCode::from(2);
        }
    };
    print!("{}", report.text);
    let mut leaks = 0;
    match connect {
        Some(cs) => match check_leaks(cs, &o.root, Duration::from_millis(o.leak_wait_ms.unwrap_or(10_000))) {
            Ok(l) => {
                print_leaks(&l);
                leaks = l.len();
            }
            Err(e) => {
                println!("leaked nodes: unknown ({e})");
                leaks = 1;
            }
        },
        None => println!("leaked nodes: not checked (no --connect)"),
    }
    if !report.violations.is_empty() || leaks > 0 {
        ExitCode::from(1)
    } else if !report.missing.is_empty() {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}
