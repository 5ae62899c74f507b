//! `--check DIR`: the checker on a finished campaign's logs, and the leak
//! check when a server is given; and the verdict both this and a run end
//! with, which says who fell short.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use zk_campaign::checker::check_dir;

use crate::cli::Opts;
use crate::leaks::{check_leaks, print_leaks};

/// Exit status: the library broke a rule (a violation) or leaked a node.
pub(crate) const EXIT_LIBRARY: u8 = 1;
/// Exit status: a usage or set-up error.
pub(crate) const EXIT_USAGE: u8 = 2;
/// Exit status: the campaign could not do what it planned (a fault kind
/// missing or short of its count, a read-back or the leak check that could
/// not be done), and the library broke no rule in what it did.
pub(crate) const EXIT_CAMPAIGN: u8 = 3;

/// The run's verdict: which side fell short, printed as one `verdict:` line,
/// and the exit status that says it. A library violation (or leak) wins over
/// the campaign's shortfalls, which are still printed.
pub(crate) fn verdict(violations: usize, leaks: usize, shortfalls: &[String]) -> ExitCode {
    let campaign = if shortfalls.is_empty() {
        String::new()
    } else {
        format!("the campaign fell short: {}", shortfalls.join("; "))
    };
    let (code, text) = if violations > 0 || leaks > 0 {
        let lib = format!("the library fell short: {violations} violations, {leaks} leaked nodes");
        let text = if campaign.is_empty() {
            lib
        } else {
            format!("{lib}; and {campaign}")
        };
        (EXIT_LIBRARY, text)
    } else if !campaign.is_empty() {
        (
            EXIT_CAMPAIGN,
            format!("{campaign} (the library broke no rule in what was done)"),
        )
    } else {
        (
            0,
            "clean: every rule held, no leak, every fault planned was made".to_string(),
        )
    };
    println!("verdict: {text} (exit {code})");
    ExitCode::from(code)
}

pub(crate) fn check_main(dir: &Path, connect: Option<&str>, o: &Opts) -> ExitCode {
    let report = match check_dir(dir, &o.check) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("zk-campaign: cannot read {}: {e}", dir.display());
            return ExitCode::from(EXIT_USAGE);
        }
    };
    print!("{}", report.text);
    let mut leaks = 0;
    let mut shortfalls = Vec::new();
    if !report.missing.is_empty() {
        shortfalls.push(format!("fault kinds missing: {}", report.missing.join(", ")));
    }
    match connect {
        Some(cs) => match check_leaks(cs, &o.root, Duration::from_millis(o.leak_wait_ms.unwrap_or(10_000))) {
            Ok(l) => {
                print_leaks(&l);
                leaks = l.len();
            }
            Err(e) => {
                println!("leaked nodes: unknown ({e})");
                shortfalls.push(format!("the leak check could not be done ({e})"));
            }
        },
        None => println!("leaked nodes: not checked (no --connect)"),
    }
    verdict(report.violations.len(), leaks, &shortfalls)
}
