//! `zk-lock`: a distributed flock(1). Runs a command while holding a
//! Curator-compatible ZooKeeper lock, and exits with the command's status.
//!
//! ```text
//! zk-lock --connect zk1:2181,zk2:2181 /locks/nightly-backup -- ./backup.sh
//! ```
//!
//! See `zk-lock --help` for options and exit codes.

mod args;
mod run;
mod signals;

use args::Parsed;

/// Exit codes (flock(1) and sysexits.h where they have one).
pub(crate) mod exit {
    // 1, the lock was not acquired (flock's default conflict code), is
    // `Options::conflict_exit_code`: `-E` changes it.
    /// Usage error (EX_USAGE).
    pub const USAGE: i32 = 64;
    /// ZooKeeper unavailable, or another lock error (EX_UNAVAILABLE).
    pub const UNAVAILABLE: i32 = 69;
    /// The lock was lost while COMMAND ran; COMMAND was terminated (EX_TEMPFAIL).
    pub const LOCK_LOST: i32 = 75;
    /// COMMAND exists but cannot be executed.
    pub const NOT_EXECUTABLE: i32 = 126;
    /// COMMAND was not found.
    pub const NOT_FOUND: i32 = 127;
}

const HELP: &str = "\
zk-lock: run a command while holding a ZooKeeper lock (a distributed flock(1))

USAGE:
    zk-lock [OPTIONS] PATH -- COMMAND [ARGS...]

zk-lock connects to ZooKeeper, takes the lock at PATH, runs COMMAND while it
holds the lock, releases the lock, closes its session and exits with COMMAND's
exit status (128+N if COMMAND was killed by signal N). COMMAND is executed
directly, not through a shell: use `sh -c '...'` for shell syntax.

The lock uses Apache Curator's node layout, so zk-lock and Java services using
Curator's InterProcessMutex (or InterProcessReadWriteLock, InterProcessSemaphoreV2
with --read/--write/--semaphore) on the same path exclude each other. Every
process sharing a PATH must use the same lock kind: a mutex, a read/write lock
and a semaphore on one path do not see each other.

ARGUMENTS:
    PATH                    the lock's absolute ZooKeeper path, e.g. /locks/backup
                            (relative to --namespace and to a chroot, if any)
    COMMAND [ARGS...]       the command to run, after `--`

OPTIONS:
        --connect S         ZooKeeper connect string host:port[,host:port...][/chroot]
                            [default: $ZK_CONNECT, else 127.0.0.1:2181]
    -w, --timeout D         give up (exit 1) if the lock is not acquired within D;
                            0 tries once without waiting [default: wait forever]
    -n, --nonblock          the same as --timeout 0
    -E, --conflict-exit-code N
                            exit with N instead of 1 when the lock is not
                            acquired, to tell it apart from COMMAND's own status
        --read              take the shared (read) half of a read/write lock: read
                            holders run together, never with a --write holder
        --write             take the exclusive (write) half of a read/write lock
        --semaphore N       take one of N leases of a counting semaphore: at most N
                            holders run at once (every holder must give the same N)
                            Without --read, --write or --semaphore: an exclusive
                            mutex (Curator's InterProcessMutex).
        --namespace NS      prefix PATH with /NS (Curator's namespace)
        --embedded          start a throwaway in-process ZooKeeper server for this
                            run only, to try zk-lock out: other zk-lock processes
                            cannot see it, so it excludes nobody
        --kill-grace D      after the lock is lost, wait D between SIGTERM and
                            SIGKILL to COMMAND [default: 5s]
        --session-timeout D ZooKeeper session timeout: how long the server keeps
                            the lock of a zk-lock that vanished (crash, network
                            partition) before another process can take it
                            [default: 30s; the server may clamp it]
        --connect-timeout D give up (exit 69) if ZooKeeper cannot be reached
                            within D [default: 15s]
    -v, --verbose           report progress on stderr (connect, acquire, release);
                            -vv adds the ZooKeeper client's logs, -vvv debug logs
    -h, --help              print this help
    -V, --version           print the version

    Options may also be written --option=VALUE. Durations: 500ms, 2s, 1m, 1h, or
    plain seconds (1.5).

WHILE COMMAND RUNS:
    If the connection to ZooKeeper is lost, zk-lock warns on stderr that the lock
    may be lost; COMMAND keeps running, and zk-lock reports when it reconnects on
    the same session (the lock is then still held). If the lock is lost for
    certain (the session expired, or someone deleted the lock node), zk-lock sends
    SIGTERM to COMMAND, SIGKILL after --kill-grace, and exits with 75. Only
    COMMAND's own process is signalled: a script that starts background jobs
    should pass the signal on to them.

    SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to zk-lock are
    forwarded to COMMAND; zk-lock then waits for COMMAND, releases the lock and
    exits with COMMAND's status. (A Ctrl-C or Ctrl-\\ typed at the terminal already
    reaches COMMAND directly and is not sent twice.) Such a signal received while
    still waiting for the lock makes zk-lock give up and exit with 128+N.

    The lock is always released (its node deleted) and the session closed before
    zk-lock exits. If zk-lock itself is killed with SIGKILL, COMMAND keeps running
    and ZooKeeper removes the lock when the session times out.

EXIT STATUS:
    COMMAND's status  COMMAND ran under the lock (128+N: killed by signal N)
      1               the lock was not acquired: --timeout passed, or --timeout 0
                      found it held (as flock(1); see --conflict-exit-code)
     64               usage error: bad option, PATH, duration or connect string
                      (EX_USAGE)
     69               ZooKeeper unavailable (not reachable within
                      --connect-timeout) or another lock error (EX_UNAVAILABLE)
     75               the lock was lost while COMMAND ran; COMMAND was terminated
                      (EX_TEMPFAIL: try again)
    126               COMMAND cannot be executed
    127               COMMAND was not found
    128+N             zk-lock got signal N while waiting for the lock

ENVIRONMENT:
    ZK_CONNECT          the connect string when --connect is not given
    RUST_LOG            log filter (env_logger syntax, e.g. RUST_LOG=debug); it
                        overrides -v. Quiet by default: errors only.

    COMMAND runs with these added:
    ZK_LOCK_PATH            the lock path (PATH)
    ZK_LOCK_NODE            the lock node zk-lock holds
    ZK_LOCK_FENCING_TOKEN   the fencing token (the node's czxid): it increases
                            with every grant of the lock; pass it to a storage
                            that rejects writes with a smaller token than one it
                            has seen, to fence off a stale holder

EXAMPLES:
    # one nightly backup at a time across the fleet
    zk-lock --connect zk1:2181,zk2:2181,zk3:2181 /locks/backup -- ./backup.sh

    # skip this run if another host is deploying
    zk-lock -n -E 100 /locks/deploy -- make deploy; [ $? -eq 100 ] && echo busy

    # wait at most 30 s; shell syntax through sh -c
    ZK_CONNECT=zk1:2181/app zk-lock -w 30s /locks/report -- sh -c 'gen > out.csv'

    # readers share, a writer is exclusive
    zk-lock --read  /locks/catalog -- ./read-catalog
    zk-lock --write /locks/catalog -- ./rebuild-catalog

    # at most 3 concurrent downloads
    zk-lock --semaphore 3 /locks/downloads -- curl -O https://example.com/big.iso

    # try it without a ZooKeeper server
    zk-lock --embedded -v /demo -- echo \"holding the lock\"
";

fn main() {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let parsed = args::parse(argv, std::env::var("ZK_CONNECT").ok());
    let opts = match parsed {
        Ok(Parsed::Help) => {
            print!("{HELP}");
            return;
        }
        Ok(Parsed::Version) => {
            println!("zk-lock {}", env!("CARGO_PKG_VERSION"));
            return;
        }
        Ok(Parsed::Run(opts)) => opts,
        Err(e) => {
            eprintln!("zk-lock: {e}");
            eprintln!("Usage: zk-lock [OPTIONS] PATH -- COMMAND [ARGS...]");
            eprintln!("Try 'zk-lock --help' for more information.");
            std::process::exit(exit::USAGE);
        }
    };
    let default_filter = match opts.verbose {
        0 => "error",
        1 => "error,zk_lock=info",
        2 => "info",
        _ => "debug",
    };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(default_filter))
        .format_timestamp_millis()
        .init();
    let code = run::run(&opts);
    std::process::exit(code);
}
