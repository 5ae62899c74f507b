//! The counter kind (`--counter`): in each worker, a thread that increments
//! one `DistributedAtomicLong` ([`COUNTER_PATH`]) until the writers are told
//! to stop, logging every increment (`J` lines); after the run the
//! coordinator reads the final value (`counter-server.log`). The lines and
//! the rules that judge them are described in `checker/counter.rs`.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use zk_framework::{CuratorFramework, RetryNTimes};
use zk_recipes::{DistributedAtomicLong, Outcome, Proof};

use crate::paths::COUNTER_PATH;
use crate::prng::Rng;
use crate::record::{err_kind, now_ns, LineLog};
use crate::resource::client;

/// The pause between a worker's increments, in milliseconds (from, to).
const THINK_MS: (u64, u64) = (10, 40);

/// The incrementer: `J pid t begin seq` before each `increment()`, `J pid t
/// end seq start outcome proof pre post read` after it, `J pid t stop` at
/// the end.
pub(crate) fn run_counter(client: &CuratorFramework, log: &LineLog, pid: u32, seed: u64, stop: impl Fn() -> bool) {
    let mut rng = Rng::new(seed ^ 0x00C0_17E7);
    let counter = match DistributedAtomicLong::new(client, COUNTER_PATH, RetryNTimes::new(20, Duration::from_millis(5)))
    {
        Ok(c) => c,
        Err(e) => {
            log.line(&format!("J {pid} {} failed {}", now_ns(), err_kind(&e)));
            log.line(&format!("J {pid} {} stop", now_ns()));
            return;
        }
    };
    let mut seq = 0u64;
    while !stop() {
        seq += 1;
        let t0 = now_ns();
        log.line(&format!("J {pid} {t0} begin {seq}"));
        let r = counter.increment();
        let t1 = now_ns();
        let (rest, failed) = match r {
            Ok(v) => {
                let (outcome, proof, read) = match v.outcome() {
                    Outcome::Applied { proof } => (
                        "applied",
                        match proof {
                            Proof::Reply => "reply",
                            Proof::Marker => "marker",
                            Proof::ReadBack => "readback",
                            // A proof this campaign does not know yet.
                            _ => "other",
                        },
                        "-".to_string(),
                    ),
                    Outcome::NotApplied => ("notapplied", "-", "-".to_string()),
                    Outcome::Unknown { read } => (
                        "unknown",
                        "-",
                        read.as_ref().map_or("-".to_string(), |r| r.value().to_string()),
                    ),
                    // An outcome this campaign does not know: judged as unknown.
                    _ => ("unknown", "-", "-".to_string()),
                };
                (
                    format!("{outcome} {proof} {} {} {read}", v.pre_value(), v.post_value()),
                    outcome != "applied",
                )
            }
            Err(e) => (format!("error {} - - -", err_kind(&e)), true),
        };
        log.line(&format!("J {pid} {t1} end {seq} {t0} {rest}"));
        let think = THINK_MS.0 + rng.below(THINK_MS.1 - THINK_MS.0) + if failed { 100 } else { 0 };
        std::thread::sleep(Duration::from_millis(think));
    }
    log.line(&format!("J {pid} {} stop", now_ns()));
}

/// Reads the counter with a fresh client: its value (0 when there is no
/// node). Curator's layout: 8 bytes big-endian.
fn read_value(cs: &str) -> Result<i64, String> {
    let c = client(cs)?;
    let r = match c.zookeeper_client().get_data(COUNTER_PATH) {
        Ok((d, _)) if d.is_empty() => Ok(0),
        Ok((d, _)) => d
            .get(..8)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(i64::from_be_bytes)
            .ok_or_else(|| format!("{COUNTER_PATH}: {} bytes", d.len())),
        Err(zk_framework::Error::NoNode { .. }) => Ok(0),
        Err(e) => Err(format!("{COUNTER_PATH}: {e}")),
    };
    c.close();
    r
}

/// Before the run: the counter's value (`J - t base value` into
/// `dir/counter-server.log`).
pub(crate) fn prepare(cs: &str, dir: &Path) -> Result<i64, String> {
    let v = read_value(cs)?;
    std::fs::write(dir.join("counter-server.log"), format!("J - {} base {v}\n", now_ns()))
        .map_err(|e| e.to_string())?;
    Ok(v)
}

/// After every incrementer stopped: the final value (`J - t final value`,
/// appended to `dir/counter-server.log`).
pub(crate) fn read_final(cs: &str, dir: &Path) -> Result<i64, String> {
    let v = read_value(cs)?;
    let mut text = std::fs::read_to_string(dir.join("counter-server.log")).unwrap_or_default();
    let _ = writeln!(text, "J - {} final {v}", now_ns());
    std::fs::write(dir.join("counter-server.log"), text).map_err(|e| e.to_string())?;
    Ok(v)
}
