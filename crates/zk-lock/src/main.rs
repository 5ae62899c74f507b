//! `zk-lock`: a distributed flock(1). Runs a command while holding a
//! Curator-compatible ZooKeeper lock, and exits with the command's status.
//!
//! ```text
//! zk-lock --connect zk1:2181,zk2:2181 /locks/nightly-backup -- ./backup.sh
//! ```
//!
//! See `zk-lock --help` for options and exit codes.

mod args;
mod client;
mod failure;
mod ops;
mod registry;
mod run;
mod signals;

use args::Parsed;

/// Exit codes (flock(1) and sysexits.h where they have one).
pub(crate) mod exit {
    /// Success (`break` deleted a node, `wait` found the lock free).
    pub const OK: i32 = 0;
    // 1, the lock was not acquired (flock's default conflict code), is
    // `Options::conflict_exit_code`: `-E` changes it.
    /// Usage error (EX_USAGE).
    pub const USAGE: i32 = 64;
    /// ZooKeeper unavailable, or another lock error (EX_UNAVAILABLE).
    pub const UNAVAILABLE: i32 = 69;
    /// The lock was lost while COMMAND ran; COMMAND was terminated (EX_TEMPFAIL).
    pub const LOCK_LOST: i32 = 75;
    /// ZooKeeper refused access: the lock's nodes are protected by an ACL these
    /// credentials do not pass (NoAuth), the credentials were refused
    /// (AuthFailed), or `--acl creator` without usable credentials (InvalidACL)
    /// (EX_NOPERM).
    pub const NO_PERMISSION: i32 = 77;
    /// COMMAND exists but cannot be executed.
    pub const NOT_EXECUTABLE: i32 = 126;
    /// COMMAND was not found.
    pub const NOT_FOUND: i32 = 127;
}

fn main() {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let parsed = args::parse(argv, &args::Env::from_process());
    let opts = match parsed {
        Ok(Parsed::Help) => {
            print!("{}", args::help());
            return;
        }
        Ok(Parsed::SubcommandHelp(text)) => {
            print!("{text}");
            return;
        }
        Ok(Parsed::Version) => {
            println!("zk-lock {}", env!("CARGO_PKG_VERSION"));
            return;
        }
        Ok(p @ (Parsed::Run(_) | Parsed::Op(_))) => p,
        Err(e) => {
            eprintln!("zk-lock: {e}");
            eprintln!("Usage: {}", args::USAGE_LINE);
            eprintln!("Try 'zk-lock --help' for more information.");
            std::process::exit(exit::USAGE);
        }
    };
    let default_filter = match opts.verbose() {
        0 => "error",
        1 => "error,zk_lock=info",
        2 => "info",
        _ => "debug",
    };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(default_filter))
        .format_timestamp_millis()
        .init();
    let code = match &opts {
        Parsed::Run(o) => run::run(o),
        Parsed::Op(
            o @ args::OpOptions {
                op: args::Op::Services { .. } | args::Op::Partition,
                ..
            },
        ) => registry::run(o),
        Parsed::Op(o) => ops::run(o),
        _ => exit::OK,
    };
    std::process::exit(code);
}
