//! The partitioner kind (`--partition`): in each worker, a thread that runs
//! a `zk_recipes::SetPartitioner` on [`PARTITION_PATH`] over [`ITEMS`]
//! items (a short settle time, `auto_release`), logging every event of its
//! `events()` channel and, while `Acquired`, a *claim* before each use of an
//! item: `fencing_tokens()` asked, and the claim logged only when it says
//! the item is held now, with the item's token (its lock node's czxid) and
//! the wall-clock bounds of the call (`O` lines). A member that fails (its
//! session lost) is closed and a new one (a new identifier) started. After
//! the coordinator's final reads the coordinator lists the party nodes left
//! ([`leaked`]). The lines and the rules that judge them are described in
//! `checker/partition.rs`.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use zk_framework::CuratorFramework;
use zk_recipes::{Allocation, FailureReason, PartitionEvent, PartitionState, ReleaseReason, SetPartitioner};

use crate::paths::PARTITION_PATH;
use crate::prng::Rng;
use crate::record::{err_kind, now_ns, LineLog};

/// How many items the set has (`p00` .. `p11`).
pub(crate) const ITEMS: usize = 12;

/// The members' settle time (kazoo's `time_boundary`): short, so that the
/// faults' churn reallocates often.
pub(crate) const SETTLE: Duration = Duration::from_millis(500);

/// How long one use of an item lasts after its claim, in milliseconds
/// (from, to).
const USE_MS: (u64, u64) = (10, 30);

/// The set's items.
pub(crate) fn items() -> Vec<String> {
    (0..ITEMS).map(|i| format!("p{i:02}")).collect()
}

/// The wall-clock time of an instant of the past (or of now).
fn wall(at: Instant) -> u64 {
    now_ns().saturating_sub(Instant::now().saturating_duration_since(at).as_nanos() as u64)
}

/// One word for a state and one for its detail (`-` when it has none).
fn state_words(s: &PartitionState) -> (&'static str, String) {
    match s {
        PartitionState::Allocating(a) => (
            "allocating",
            match a {
                Allocation::Joining => "joining",
                Allocation::IdentifierTaken { .. } => "taken",
                Allocation::Releasing => "releasing",
                Allocation::Settling { .. } => "settling",
                Allocation::Acquiring { .. } => "acquiring",
                _ => "other",
            }
            .to_string(),
        ),
        PartitionState::Acquired { items } if items.is_empty() => ("acquired", "-".into()),
        PartitionState::Acquired { items } => ("acquired", items.join(",")),
        PartitionState::Release { reason } => (
            "release",
            match reason {
                ReleaseReason::MembershipChanged => "membership".to_string(),
                ReleaseReason::LockLost { item } => format!("lost:{item}"),
                _ => "other".to_string(),
            },
        ),
        PartitionState::Suspended => ("suspended", "-".into()),
        PartitionState::Stuck { item, .. } => ("stuck", item.clone()),
        PartitionState::Failure { reason } => (
            "failure",
            match reason {
                FailureReason::SessionLost => "session-lost",
                FailureReason::Closed => "closed",
                FailureReason::ClientClosed => "client-closed",
                FailureReason::FunctionPanicked { .. } => "function-panicked",
                FailureReason::ForeignItem { .. } => "foreign-item",
                FailureReason::ItemTwice { .. } => "item-twice",
                _ => "other",
            }
            .to_string(),
        ),
        _ => ("other", "-".into()),
    }
}

/// The worker's members, one after another (a new one after a failure)
/// until `end()`; after `stop()` (the writers told to stop: every fault
/// has healed) the member must own its share and claim each item of it
/// within `bound`: `O pid t final ok|not share`, then `O pid t settled`
/// (what the coordinator waits for), and it goes on claiming until
/// `end()`.
///
/// Lines: `O pid t start member settle-ms items`; `O pid t ev member
/// session at state detail` (an event, `at` its instant in wall-clock ns,
/// `session` the client's when it was received, hex); `O pid t claim
/// member session item token lo hi` (`fencing_tokens()` called from `lo`
/// to `hi` said the item is held with that token); `O pid t failed member
/// error-kind` (not built or not started); `O pid t closed member
/// ok|error-kind`; `O pid t final ok|not share`; `O pid t settled`; `O pid
/// t stop`.
pub(crate) fn run_partition(
    client: &CuratorFramework,
    log: &LineLog,
    pid: u32,
    seed: u64,
    bound: Duration,
    stop: impl Fn() -> bool,
    end: impl Fn() -> bool,
) {
    let mut rng = Rng::new(seed ^ 0x0050_A127);
    let mut gen = 0u64;
    let mut settle = Settle::default();
    while !end() {
        gen += 1;
        let member = format!("w{pid}-{gen}");
        let built = SetPartitioner::builder(client, PARTITION_PATH, items())
            .identifier(member.clone())
            .time_boundary(SETTLE)
            .auto_release(true)
            .build();
        let p = match built {
            Ok(p) => p,
            Err(e) => {
                log.line(&format!("O {pid} {} failed {member} {}", now_ns(), err_kind(&e)));
                std::thread::sleep(Duration::from_millis(500));
                continue;
            }
        };
        let m = Member {
            client,
            log,
            pid,
            events: p.events(),
            member,
            p,
        };
        log.line(&format!(
            "O {pid} {} start {} {} {}",
            now_ns(),
            m.member,
            SETTLE.as_millis(),
            items().join(",")
        ));
        if let Err(e) = m.p.start() {
            log.line(&format!("O {pid} {} failed {} {}", now_ns(), m.member, err_kind(&e)));
        }
        m.run(&mut rng, &mut settle, bound, &stop, &end);
        m.close();
        if !end() {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    if !settle.said {
        // Stopped before the writers were: nothing to wait for.
        log.line(&format!("O {pid} {} final not -", now_ns()));
        log.line(&format!("O {pid} {} settled", now_ns()));
    }
    log.line(&format!("O {pid} {} stop", now_ns()));
}

/// The end of the run, across members: since when the writers were told
/// to stop, the items claimed since, and whether `settled` was said.
#[derive(Default)]
struct Settle {
    since: Option<Instant>,
    claimed: BTreeSet<String>,
    said: bool,
}

/// One member while it lives.
struct Member<'a> {
    client: &'a CuratorFramework,
    log: &'a LineLog,
    pid: u32,
    events: Receiver<PartitionEvent>,
    member: String,
    p: SetPartitioner,
}

impl Member<'_> {
    /// Logs an event; returns its state.
    fn log_ev(&self, ev: &PartitionEvent) {
        let (state, detail) = state_words(&ev.state);
        self.log.line(&format!(
            "O {} {} ev {} {:x} {} {state} {detail}",
            self.pid,
            now_ns(),
            self.member,
            self.client.session_id(),
            wall(ev.at)
        ));
    }

    /// Events and claims until the member fails or `end()`.
    fn run(
        &self,
        rng: &mut Rng,
        settle: &mut Settle,
        bound: Duration,
        stop: &impl Fn() -> bool,
        end: &impl Fn() -> bool,
    ) {
        let mut share: Vec<String> = Vec::new();
        let mut next = 0usize;
        loop {
            if end() {
                return;
            }
            if settle.since.is_none() && stop() {
                settle.since = Some(Instant::now());
            }
            let wait = if share.is_empty() {
                Duration::from_millis(50)
            } else {
                let item = share[next % share.len()].clone();
                next += 1;
                if self.claim(&item) && settle.since.is_some() {
                    settle.claimed.insert(item);
                }
                Duration::from_millis(USE_MS.0 + rng.below(USE_MS.1 - USE_MS.0))
            };
            self.settled(settle, &share, bound);
            // The use: events meanwhile are logged as they come.
            let deadline = Instant::now() + wait;
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                match self.events.recv_timeout(left) {
                    Ok(ev) => {
                        self.log_ev(&ev);
                        share = ev.state.share().to_vec();
                        next = 0;
                        if ev.state.is_failure() {
                            return;
                        }
                    }
                    Err(RecvTimeoutError::Timeout) => break,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
        }
    }

    /// A claim before a use of `item`: logged only when the member says
    /// it holds it now. Returns whether it did.
    fn claim(&self, item: &str) -> bool {
        let lo = now_ns();
        let r = self.p.fencing_tokens();
        let hi = now_ns();
        let Ok(owned) = r else { return false };
        let Some((_, token)) = owned.iter().find(|(i, _)| i == item) else {
            return false;
        };
        self.log.line(&format!(
            "O {} {hi} claim {} {:x} {item} {token} {lo} {hi}",
            self.pid,
            self.member,
            self.client.session_id()
        ));
        true
    }

    /// After the writers were told to stop: `final` and `settled` once the
    /// member owns its share and has claimed each item of it since, or
    /// `bound` after.
    fn settled(&self, settle: &mut Settle, share: &[String], bound: Duration) {
        let Some(since) = settle.since else { return };
        if settle.said {
            return;
        }
        let acquired = self.p.state().is_acquired();
        let done = acquired && share.iter().all(|i| settle.claimed.contains(i));
        if !done && since.elapsed() < bound {
            return;
        }
        settle.said = true;
        self.log.line(&format!(
            "O {} {} final {} {}",
            self.pid,
            now_ns(),
            if done { "ok" } else { "not" },
            if share.is_empty() {
                "-".to_string()
            } else {
                share.join(",")
            }
        ));
        self.log.line(&format!("O {} {} settled", self.pid, now_ns()));
    }

    /// Closes the member, logging the events left.
    fn close(self) {
        let r = self.p.close();
        for ev in self.events.try_iter() {
            self.log_ev(&ev);
        }
        self.log.line(&format!(
            "O {} {} closed {} {}",
            self.pid,
            now_ns(),
            self.member,
            r.map_or_else(|e| err_kind(&e), |()| "ok".into())
        ));
    }
}

/// The party nodes left under [`PARTITION_PATH`]`/party` (every one is a
/// leak once the workers closed their members and the killed ones'
/// sessions expired): polls until none is left or `wait` passes. The lock
/// nodes (`_c_` names under `/campaign`) are the lock leak check's.
pub(crate) fn leaked(cs: &str, wait: Duration) -> Result<Vec<String>, String> {
    crate::leaks::children_left(cs, &format!("{PARTITION_PATH}/party"), wait)
}

/// The bound within which every item must be owned and claimed again after
/// the last fault heals (the checker's
/// [`zk_campaign::checker::partition_bound`]).
pub(crate) fn bound(session: Duration) -> Duration {
    Duration::from_nanos(zk_campaign::checker::partition_bound(
        session.as_nanos() as u64,
        SETTLE.as_nanos() as u64,
    ))
}
