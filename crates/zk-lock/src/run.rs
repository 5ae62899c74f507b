//! Connect, take the lock, run COMMAND under it, watch the lock and the
//! signals, release, close.

use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::{getpgid, getpgrp, getpid, Pid};
use zk_framework::CuratorFramework;
use zk_recipes::{
    InterProcessMutex, InterProcessMutexGuard, InterProcessReadWriteLock, InterProcessSemaphoreV2, Lease, LockEvent,
    ReadLockGuard, WriteLockGuard,
};

use crate::args::{human, Kind, Options};
use crate::client::{build_client, start_embedded};
use crate::exit;
use crate::failure;
use crate::signals::{self, Received};

/// Where the run is, as the signal thread needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Connecting or waiting for the lock: a signal aborts the run.
    Preparing,
    /// COMMAND runs: signals go to it.
    Running,
    /// COMMAND has exited; the lock is being released.
    Finishing,
}

struct Shared {
    phase: Phase,
    client: Option<CuratorFramework>,
}

/// The lock, of the kind asked for.
enum Lock {
    Mutex(Box<InterProcessMutex>),
    ReadWrite { rw: InterProcessReadWriteLock, write: bool },
    Semaphore(InterProcessSemaphoreV2),
}

/// A held lock.
enum Held<'a> {
    Mutex(InterProcessMutexGuard<'a>),
    Read(ReadLockGuard<'a>),
    Write(WriteLockGuard<'a>),
    Lease(Box<Lease>),
}

impl Lock {
    fn new(client: &CuratorFramework, path: &str, kind: Kind) -> zk_recipes::Result<Lock> {
        Ok(match kind {
            Kind::Mutex => Lock::Mutex(Box::new(InterProcessMutex::new(client, path)?)),
            Kind::Read | Kind::Write => Lock::ReadWrite {
                rw: InterProcessReadWriteLock::new(client, path)?,
                write: kind == Kind::Write,
            },
            Kind::Semaphore(n) => Lock::Semaphore(InterProcessSemaphoreV2::new(client, path, n)?),
        })
    }

    /// `timeout`: `None` waits forever; `Ok(None)` means not acquired in time.
    fn acquire(&self, timeout: Option<Duration>) -> zk_recipes::Result<Option<Held<'_>>> {
        match (self, timeout) {
            (Lock::Mutex(m), None) => m.acquire().map(|g| Some(Held::Mutex(g))),
            (Lock::Mutex(m), Some(t)) => m.try_acquire_for(t).map(|g| g.map(Held::Mutex)),
            (Lock::ReadWrite { rw, write: false }, None) => rw.read_lock().acquire().map(|g| Some(Held::Read(g))),
            (Lock::ReadWrite { rw, write: false }, Some(t)) => {
                rw.read_lock().try_acquire_for(t).map(|g| g.map(Held::Read))
            }
            (Lock::ReadWrite { rw, write: true }, None) => rw.write_lock().acquire().map(|g| Some(Held::Write(g))),
            (Lock::ReadWrite { rw, write: true }, Some(t)) => {
                rw.write_lock().try_acquire_for(t).map(|g| g.map(Held::Write))
            }
            (Lock::Semaphore(s), None) => s.acquire().map(|l| Some(Held::Lease(Box::new(l)))),
            (Lock::Semaphore(s), Some(t)) => s.try_acquire_for(t).map(|l| l.map(|l| Held::Lease(Box::new(l)))),
        }
    }
}

impl Held<'_> {
    fn node(&self) -> String {
        match self {
            Held::Mutex(g) => g.lock_path(),
            Held::Read(g) => g.lock_path(),
            Held::Write(g) => g.lock_path(),
            Held::Lease(l) => l.lock_path(),
        }
    }

    fn fencing_token(&self) -> i64 {
        match self {
            Held::Mutex(g) => g.fencing_token(),
            Held::Read(g) => g.fencing_token(),
            Held::Write(g) => g.fencing_token(),
            Held::Lease(l) => l.fencing_token(),
        }
    }

    fn events(&self) -> Receiver<LockEvent> {
        match self {
            Held::Mutex(g) => g.events(),
            Held::Read(g) => g.events(),
            Held::Write(g) => g.events(),
            Held::Lease(l) => l.events(),
        }
    }

    fn safe_until(&self) -> Option<Instant> {
        match self {
            Held::Mutex(g) => g.safe_until(),
            Held::Read(g) => g.safe_until(),
            Held::Write(g) => g.safe_until(),
            Held::Lease(l) => l.safe_until(),
        }
    }

    fn release(self) -> zk_recipes::Result<()> {
        match self {
            Held::Mutex(g) => g.release(),
            Held::Read(g) => g.release(),
            Held::Write(g) => g.release(),
            Held::Lease(l) => (*l).release(),
        }
    }
}

/// Runs the whole thing and returns zk-lock's exit status.
pub fn run(opts: &Options) -> i32 {
    let (events_tx, events_rx) = crossbeam_channel::unbounded::<Received>();
    let shared = Arc::new(Mutex::new(Shared {
        phase: Phase::Preparing,
        client: None,
    }));
    if let Err(e) = signals::spawn(signal_handler(shared.clone(), events_tx)) {
        eprintln!("zk-lock: cannot install signal handlers: {e}");
        return exit::UNAVAILABLE;
    }

    // With --embedded the server lives as long as this function.
    let (_server, connect) = match start_embedded(&opts.conn) {
        Ok(v) => v,
        Err(code) => return code,
    };
    // Holders show their COMMAND's program in their lock node (`zk-lock
    // status`); never its arguments, which may hold secrets and the node is
    // readable by anyone the ACL lets read the path.
    let program = opts
        .command
        .first()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut name = format!("zk-lock -- {program}");
    if name.len() > 96 {
        let mut cut = 93;
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        name.truncate(cut);
        name.push_str("...");
    }
    let built = build_client(&opts.conn, &connect, &opts.path);
    if built.is_err() {
        set_phase(&shared, Phase::Finishing);
    }
    let client = match built {
        Ok(c) => c,
        Err(code) => return code,
    };
    zk_recipes::set_process_name(&client, name);
    shared.lock().unwrap_or_else(|p| p.into_inner()).client = Some(client.clone());
    let code = run_with_client(opts, &connect, &client, &shared, &events_rx);
    client.close();
    log::info!("closed the ZooKeeper session");
    code
}

/// The signal thread's decisions.
fn signal_handler(shared: Arc<Mutex<Shared>>, events: Sender<Received>) -> impl FnMut(Received) + Send + 'static {
    move |r: Received| {
        if r.signal == signals::CHILD {
            let _ = events.send(r);
            return;
        }
        let st = shared.lock().unwrap_or_else(|p| p.into_inner());
        match st.phase {
            Phase::Preparing => {
                // Nothing runs yet: give up. Closing the session deletes a queued
                // or just-granted lock node at once. The phase mutex stays locked
                // until the process exits, so the main thread can neither start
                // COMMAND nor report an error of its own meanwhile.
                eprintln!(
                    "zk-lock: {} received before COMMAND started; giving up",
                    signals::name(r.signal)
                );
                if let Some(c) = &st.client {
                    c.close();
                }
                std::process::exit(128 + r.signal);
            }
            Phase::Running => {
                let _ = events.send(r);
            }
            Phase::Finishing => {
                log::info!(
                    "ignoring {}: COMMAND has exited, the lock is being released",
                    signals::name(r.signal)
                );
            }
        }
    }
}

fn set_phase(shared: &Mutex<Shared>, phase: Phase) {
    shared.lock().unwrap_or_else(|p| p.into_inner()).phase = phase;
}

fn run_with_client(
    opts: &Options,
    connect: &str,
    client: &CuratorFramework,
    shared: &Mutex<Shared>,
    events: &Receiver<Received>,
) -> i32 {
    if let Err(e) = client.block_until_connected(opts.conn.connect_timeout) {
        set_phase(shared, Phase::Finishing);
        return failure::not_connected(&e, connect, &opts.conn);
    }
    log::info!("connected to {connect} (session 0x{:x})", client.session_id());
    let grace = fit_grace(client, opts.kill_grace);

    let path = opts.path.as_str();
    let lock = match Lock::new(client, path, opts.kind) {
        Ok(l) => l,
        Err(e) => {
            set_phase(shared, Phase::Finishing);
            // The path was checked while parsing; this is a late usage error.
            eprintln!("zk-lock: {e}");
            return exit::USAGE;
        }
    };
    log::info!(
        "waiting for the {} on {path} ({})",
        opts.kind.describe(),
        opts.timeout
            .map_or_else(|| "no timeout".to_string(), |t| format!("timeout {}", human(t)))
    );
    let acquired = lock.acquire(opts.timeout);
    // Leaving the preparing phase: when a signal is aborting the run, the
    // signal thread holds this mutex until the process exits, so neither an
    // error message nor COMMAND can follow.
    let mut st = shared.lock().unwrap_or_else(|p| p.into_inner());
    let held = match acquired {
        Ok(Some(h)) => h,
        other => {
            st.phase = Phase::Finishing;
            drop(st);
            return not_acquired(client, other.map(|_| ()), path, opts);
        }
    };
    let node = held.node();
    let token = held.fencing_token();
    // Subscribe before COMMAND starts so that no loss event is missed.
    let loss = held.events();
    log::info!(
        "acquired the {} on {path}: node {node}, fencing token {token}",
        opts.kind.describe()
    );

    let mut cmd = Command::new(&opts.command[0]);
    cmd.args(&opts.command[1..])
        .env("ZK_LOCK_PATH", path)
        .env("ZK_LOCK_NODE", &node)
        .env("ZK_LOCK_FENCING_TOKEN", token.to_string())
        // The credentials stay with zk-lock.
        .env_remove(crate::args::AUTH_ENV)
        .env_remove(crate::args::SASL_PASSWORD_ENV);
    // COMMAND gets a process group of its own, so that a loss and the final
    // clean-up reach the processes it started; not in a terminal's foreground,
    // where COMMAND must stay in the foreground group to use the terminal.
    let own_group = !in_terminal_foreground();
    if own_group {
        cmd.process_group(0);
    }
    die_with_parent(&mut cmd);
    let spawned = cmd.spawn();
    st.phase = if spawned.is_ok() {
        Phase::Running
    } else {
        Phase::Finishing
    };
    drop(st);
    let (code, lost) = match spawned {
        Ok(child) => {
            let outcome = supervise(child, own_group, &held, &loss, events, opts, grace);
            set_phase(shared, Phase::Finishing);
            outcome
        }
        Err(e) => (spawn_failure(&opts.command[0], &e), false),
    };

    match held.release() {
        Ok(()) => log::info!("released the lock on {path} (deleted {node})"),
        // Never "released": the server had removed the node already.
        Err(zk_recipes::Error::LockLost { .. }) => {
            log::warn!("the lock on {path} was lost before the release ({node} was already gone)")
        }
        Err(e) if lost => log::info!("releasing the lost lock on {path}: {e}"),
        Err(e) => eprintln!(
            "zk-lock: warning: could not delete the lock node {node} now ({e}); \
             ZooKeeper removes it when the session ends"
        ),
    }
    code
}

/// Whether zk-lock runs in the foreground process group of the terminal on
/// its standard input (an interactive run).
fn in_terminal_foreground() -> bool {
    nix::unistd::tcgetpgrp(io::stdin()).is_ok_and(|fg| fg == getpgrp())
}

/// Makes the kernel SIGKILL COMMAND when zk-lock dies (Linux: the parent-death
/// signal, `PR_SET_PDEATHSIG`), so that COMMAND never outlives the lock, even
/// when zk-lock is killed with SIGKILL or by the OOM killer and cannot clean up.
/// SIGKILL, not SIGTERM: COMMAND can neither ignore it nor outlast the session
/// timeout (after which the next holder runs) in a slow handler.
///
/// The signal is tied to the thread that forks: this is the main thread,
/// which lives as long as the process. If zk-lock died between the fork and
/// the `prctl`, the signal would never come; the child checks that its parent
/// is still zk-lock and gives up otherwise.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn die_with_parent(cmd: &mut Command) {
    let parent = getpid();
    // SAFETY: the hook runs in the child between fork and exec, where only
    // async-signal-safe calls are allowed: prctl(2) and getppid(2) are plain
    // system calls, and the errors are built without allocating.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(|e| io::Error::from_raw_os_error(e as i32))?;
            if nix::unistd::getppid() != parent {
                // zk-lock is already gone (the child was re-parented).
                return Err(io::Error::from_raw_os_error(nix::libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Elsewhere there is no parent-death signal: COMMAND outlives a zk-lock
/// killed with SIGKILL (see `--help`).
#[cfg(not(target_os = "linux"))]
fn die_with_parent(_cmd: &mut Command) {}

/// COMMAND, or COMMAND's process group when it has its own.
#[derive(Debug, Clone, Copy)]
struct Target {
    pid: Pid,
    group: bool,
}

impl Target {
    /// Sends `sig` to COMMAND's group (or COMMAND alone when it shares ours).
    fn signal(self, sig: Signal) -> nix::Result<()> {
        if self.group {
            killpg(self.pid, sig)
        } else {
            kill(self.pid, sig)
        }
    }

    fn describe(self) -> String {
        if self.group {
            format!("COMMAND's process group (pid {})", self.pid)
        } else {
            format!("COMMAND (pid {})", self.pid)
        }
    }

    /// After COMMAND exited: kills what is left of its group, so that none of
    /// its processes outlives the lock.
    fn kill_leftovers(self) {
        if self.group && killpg(self.pid, Signal::SIGKILL).is_ok() {
            log::info!("COMMAND has exited; killed the processes left in its group (SIGKILL)");
        }
    }
}

/// Reports a lock that was not acquired (`Ok(())`: timed out) and returns the
/// exit status; errors go through the one mapping of every mode
/// ([`failure::report`]).
fn not_acquired(client: &CuratorFramework, r: zk_recipes::Result<()>, path: &str, opts: &Options) -> i32 {
    match r {
        Ok(()) => {
            match opts.timeout {
                Some(Duration::ZERO) => {
                    eprintln!("zk-lock: {path} was not acquired (not waiting: --timeout 0): it is held")
                }
                Some(t) => eprintln!("zk-lock: could not get the lock on {path} within {}", human(t)),
                None => eprintln!("zk-lock: could not get the lock on {path}"),
            }
            opts.conflict_exit_code
        }
        Err(e) => failure::report(
            client,
            &opts.conn,
            path,
            failure::Doing::Locking,
            &format!("could not take the lock on {path}"),
            &e,
        ),
    }
}

fn spawn_failure(program: &std::ffi::OsStr, e: &io::Error) -> i32 {
    let program = program.to_string_lossy();
    if e.kind() == io::ErrorKind::NotFound {
        eprintln!("zk-lock: {program}: command not found");
        exit::NOT_FOUND
    } else {
        eprintln!("zk-lock: {program}: cannot execute: {e}");
        exit::NOT_EXECUTABLE
    }
}

/// How long before the lock's safe horizon the SIGKILL is sent: room for the
/// kernel to end COMMAND and for this thread to wake late on a busy machine.
/// The horizon itself already keeps a margin before the server can expire the
/// session (see `zk_framework::CuratorFramework::session_horizon`).
const KILL_SLACK: Duration = Duration::from_millis(100);

/// The grace that fits the negotiated session: COMMAND gets SIGTERM at the
/// safe horizon minus the grace (minus [`KILL_SLACK`]), and the horizon runs
/// ahead of now by between `T - margin` (just after a ping's answer) and about
/// two ninths of `T` less (when the next ping is due). A grace that does not
/// fit below that would stop COMMAND on a healthy connection: it is cut to half
/// of what fits (the other half is what a blip may last before COMMAND is
/// stopped), and zk-lock says so at start-up.
fn fit_grace(client: &CuratorFramework, grace: Duration) -> Duration {
    let (Some(t), Some(horizon)) = (client.negotiated_session_timeout(), client.session_horizon()) else {
        return grace;
    };
    let lead = horizon.saturating_duration_since(Instant::now());
    let fits = lead
        .saturating_sub(t * 2 / 9)
        .saturating_sub(Duration::from_millis(100))
        .saturating_sub(KILL_SLACK);
    if grace <= fits {
        return grace;
    }
    let cut = fits / 2;
    eprintln!(
        "zk-lock: warning: the session timeout ({}) is too short for --kill-grace {}: if the connection \
         is lost, COMMAND gets SIGTERM and then SIGKILL {} later, before ZooKeeper may expire the session \
         (use a longer --session-timeout for more)",
        human(t),
        human(grace),
        human(cut)
    );
    cut
}

/// Waits for COMMAND, forwarding signals and acting on loss events and on the
/// lock's safe horizon. Returns zk-lock's exit status and whether COMMAND was
/// stopped because the lock was lost or could no longer be guaranteed.
///
/// The horizon is the instant until which ZooKeeper cannot have expired the
/// session (the lock's `safe_until`). While the connection is healthy it
/// moves ahead with every answer; when the connection is lost it stops, and
/// COMMAND gets SIGTERM at `horizon - grace - KILL_SLACK` and SIGKILL at
/// `horizon - KILL_SLACK`, so that it is gone before the next holder can be
/// granted. A reconnect before the SIGTERM moves the horizon on and cancels
/// it.
fn supervise(
    mut child: Child,
    own_group: bool,
    held: &Held<'_>,
    loss: &Receiver<LockEvent>,
    events: &Receiver<Received>,
    opts: &Options,
    grace: Duration,
) -> (i32, bool) {
    let pid = Pid::from_raw(child.id() as i32);
    let target = Target { pid, group: own_group };
    let path = opts.path.as_str();
    let mut loss = loss.clone();
    let mut suspended = false;
    let mut lost = false;
    let mut kill_at: Option<Instant> = None;
    let stop = |why: &str, kill_at: Instant| {
        eprintln!(
            "zk-lock: {why}; sending SIGTERM to {}, SIGKILL in {}",
            target.describe(),
            human(kill_at.saturating_duration_since(Instant::now()))
        );
        let _ = target.signal(Signal::SIGTERM);
    };
    loop {
        // Only this thread reaps COMMAND, so `pid` cannot be reused while we
        // might still signal it.
        match child.try_wait() {
            Ok(Some(status)) => {
                target.kill_leftovers();
                return (finished(status, lost, path), lost);
            }
            Ok(None) => {}
            Err(e) => {
                eprintln!("zk-lock: cannot wait for COMMAND: {e}");
                return (exit::UNAVAILABLE, lost);
            }
        }
        let now = Instant::now();
        if let Some(at) = kill_at {
            if now >= at {
                eprintln!(
                    "zk-lock: COMMAND (pid {pid}) did not exit after SIGTERM; sending SIGKILL to {}",
                    target.describe()
                );
                let _ = target.signal(Signal::SIGKILL);
                kill_at = None;
            }
        }
        // The next moment to look again: the SIGKILL, or the SIGTERM that
        // the horizon calls for.
        let mut next = kill_at;
        if !lost {
            match held.safe_until() {
                // Lost for certain (the loss event only wakes this loop).
                None => {
                    lost = true;
                    let at = now + grace;
                    stop(
                        &format!("the lock on {path} was lost (session expired or lock node deleted)"),
                        at,
                    );
                    kill_at = Some(at);
                    next = kill_at;
                }
                Some(horizon) => {
                    let term_at = horizon.checked_sub(grace + KILL_SLACK).unwrap_or(now);
                    if now >= term_at {
                        lost = true;
                        let at = horizon.checked_sub(KILL_SLACK).unwrap_or(now).max(now);
                        stop(
                            &format!(
                                "ZooKeeper has not answered in time: the lock on {path} is certain only for {} more \
                                 (the session may expire then and another holder start)",
                                human(horizon.saturating_duration_since(now))
                            ),
                            at,
                        );
                        kill_at = Some(at);
                        next = kill_at;
                    } else {
                        next = Some(next.map_or(term_at, |k| k.min(term_at)));
                    }
                }
            }
        }
        let timer = next.map_or_else(crossbeam_channel::never, crossbeam_channel::at);
        crossbeam_channel::select! {
            recv(events) -> r => {
                if let Ok(r) = r {
                    if r.signal != signals::CHILD {
                        forward(pid, r);
                    }
                }
            }
            recv(loss) -> ev => match ev {
                Ok(LockEvent::Suspended) => {
                    if !suspended && !lost {
                        suspended = true;
                        let left = held
                            .safe_until()
                            .map_or(Duration::ZERO, |h| h.saturating_duration_since(Instant::now()));
                        eprintln!(
                            "zk-lock: warning: lost the connection to ZooKeeper; the lock on {path} may be lost \
                             (COMMAND keeps running; it gets SIGTERM in {} unless the connection comes back)",
                            human(left.saturating_sub(grace + KILL_SLACK))
                        );
                    }
                }
                Ok(LockEvent::Reconnected) => {
                    if suspended && !lost {
                        suspended = false;
                        eprintln!("zk-lock: reconnected to ZooKeeper on the same session: the lock on {path} is held again");
                    }
                }
                // `Lost`, `HorizonPassed`: the horizon above acts on them.
                Ok(_) => {}
                Err(_) => loss = crossbeam_channel::never(),
            },
            recv(timer) -> _ => {}
            // COMMAND's exit comes as SIGCHLD on `events`; a slow tick is
            // only a safety net.
            default(Duration::from_millis(250)) => {}
        }
    }
}

/// Forwards a signal to COMMAND, except a keyboard signal (SIGINT, SIGQUIT)
/// that the terminal already sent to COMMAND's process group (it is ours).
fn forward(pid: Pid, r: Received) {
    let name = signals::name(r.signal);
    let keyboard = r.signal == nix::libc::SIGINT || r.signal == nix::libc::SIGQUIT;
    if keyboard && r.from_kernel && getpgid(Some(pid)).ok() == Some(getpgrp()) {
        log::info!("{name} came from the terminal, which sent it to COMMAND too; not forwarding");
        return;
    }
    match Signal::try_from(r.signal) {
        Ok(sig) => {
            log::info!("forwarding {name} to COMMAND (pid {pid})");
            if let Err(e) = kill(pid, sig) {
                log::info!("forwarding {name} to pid {pid}: {e}");
            }
        }
        Err(e) => log::warn!("cannot forward signal {}: {e}", r.signal),
    }
}

fn finished(status: ExitStatus, lost: bool, path: &str) -> i32 {
    let code = status
        .code()
        .unwrap_or_else(|| status.signal().map_or(exit::UNAVAILABLE, |s| 128 + s));
    if lost {
        eprintln!(
            "zk-lock: COMMAND was terminated because the lock on {path} was lost or could no longer be \
             guaranteed; exiting with {}",
            exit::LOCK_LOST
        );
        return exit::LOCK_LOST;
    }
    match status.signal() {
        Some(s) => log::info!("COMMAND was killed by {}; exiting with {code}", signals::name(s)),
        None => log::info!("COMMAND exited with status {code}"),
    }
    code
}
