//! Signal reception: a thread that turns the signals zk-lock handles into
//! calls of a handler, with a hint of who sent them.

use std::io;

use signal_hook::consts::{SIGCHLD, SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};
use signal_hook::iterator::exfiltrator::WithRawSiginfo;
use signal_hook::iterator::SignalsInfo;

/// The signals forwarded to COMMAND.
pub const FORWARDED: [i32; 6] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2];

/// `SIGCHLD`: COMMAND changed state.
pub const CHILD: i32 = SIGCHLD;

/// One received signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// The signal number.
    pub signal: i32,
    /// Sent by the kernel itself (`SI_KERNEL`), as a terminal does for the
    /// keyboard's SIGINT and SIGQUIT (to the whole foreground process group),
    /// rather than by a process with kill(2).
    pub from_kernel: bool,
}

/// The signal's name, e.g. `SIGTERM`.
pub fn name(signal: i32) -> String {
    nix::sys::signal::Signal::try_from(signal).map_or_else(|_| format!("signal {signal}"), |s| s.as_str().to_string())
}

/// Installs handlers for [`FORWARDED`] and [`CHILD`] (their default actions no
/// longer apply) and calls `handler` for each on a dedicated thread.
///
/// # Errors
///
/// Registering the handlers or spawning the thread fails.
pub fn spawn(mut handler: impl FnMut(Received) + Send + 'static) -> io::Result<()> {
    let mut wanted = FORWARDED.to_vec();
    wanted.push(CHILD);
    let mut signals = SignalsInfo::<WithRawSiginfo>::new(&wanted)?;
    std::thread::Builder::new()
        .name("zk-lock-signals".into())
        .spawn(move || {
            for info in signals.forever() {
                handler(Received {
                    signal: info.si_signo,
                    from_kernel: info.si_code == nix::libc::SI_KERNEL,
                });
            }
        })?;
    Ok(())
}
