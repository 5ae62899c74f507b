//! Writing the logs: the line log, wall-clock nanoseconds, hex for session
//! passwords, and the one-word names of errors and guard statuses.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use zk_recipes::{Error as LockError, LockStatus};

pub(crate) fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The first word of a `Debug` rendering: the variant name.
fn variant(debug: &str) -> String {
    let w: String = debug.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    if w.is_empty() {
        "?".into()
    } else {
        w
    }
}

/// A one-word name for a recipe error (`ZooKeeper.ConnectionLoss`, `NotOwner`,
/// `Multiple[ZooKeeper.ConnectionLoss+ZooKeeper.ConnectionLoss]`).
pub(crate) fn err_kind(e: &LockError) -> String {
    match e {
        LockError::ZooKeeper(z) => format!("ZooKeeper.{}", variant(&format!("{z:?}"))),
        LockError::Multiple(v) => format!("Multiple[{}]", v.iter().map(err_kind).collect::<Vec<_>>().join("+")),
        other => variant(&format!("{other:?}")),
    }
}

pub(crate) fn status_str(s: LockStatus) -> &'static str {
    match s {
        LockStatus::Held => "Held",
        LockStatus::Uncertain => "Uncertain",
        LockStatus::Lost => "Lost",
    }
}

/// A file written one whole line per `write` (O_APPEND), so lines from threads
/// never interleave and a `kill -9` loses at most the line being written.
#[derive(Debug)]
pub(crate) struct LineLog(Mutex<File>);

impl LineLog {
    pub(crate) fn open(path: &Path) -> io::Result<LineLog> {
        Ok(LineLog(Mutex::new(
            OpenOptions::new().create(true).append(true).open(path)?,
        )))
    }

    pub(crate) fn line(&self, s: &str) {
        let mut f = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut buf = String::with_capacity(s.len() + 1);
        buf.push_str(s);
        buf.push('\n');
        let _ = f.write_all(buf.as_bytes());
    }
}
