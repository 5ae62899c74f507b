//! The reconfigurable ensemble's faults (`--reconfigurable`, `src/reconf.rs`):
//!
//! | kind | steps |
//! |---|---|
//! | `rolling-replace` | every member of the ensemble replaced, one by one in a random order, by a new server on new ports: a new JVM started (an observer first), added by `reconfig`, the old member removed by `reconfig` and stopped, a quorum; 0.2-1.5 s between steps. Each step waits (up to 60 s) for a whole ensemble (every member running, none paused or taken down by another part) and holds the ensemble's handle while it runs. Each member added and removed is logged (`EM t added\|removed ID ADDR`) |
//! | `stop-leader`, `kill-leader`, `stop-follower`, `kill-follower` | the member that leads (follows) *now*, named by its server id, stopped or killed, restarted 0.5-3 s later if it is still a member (a member removed meanwhile is left stopped, and said so) |
//! | `pause-short`, `pause-long` | the member that leads now paused (SIGSTOP, by its pid) for 0.3-0.7 or 1.5 session timeouts |
//!
//! The other kinds of this backend (`instant-expire`, `kill-worker`,
//! `break-waiter`, the composed ones) find the servers by the members'
//! addresses now; their clients (the coordinator's own) follow the
//! ensemble as the workers' do.

use std::io;
use std::time::{Duration, Instant};

use super::{kept_by_another, ms_since, sleep_until, Faults};
use crate::reconf::{Member, Reconf};
use crate::record::now_ns;
use crate::server::Server;

/// How long a step waits for a whole ensemble (another part's stop, pause
/// or restart to end) before the replacement is given up.
const WHOLE_PATIENCE: Duration = Duration::from_secs(60);

/// The reconfigurable ensemble `server` is, or an error for a kind that
/// needs one.
fn reconfigurable(server: &Server) -> io::Result<&Reconf> {
    server
        .reconf()
        .ok_or_else(|| io::Error::other("this kind needs --reconfigurable"))
}

impl Faults<'_> {
    /// Every member replaced, one by one (see the module).
    pub(super) fn rolling_replace(&mut self) -> io::Result<String> {
        let r = reconfigurable(self.server)?;
        let t0 = Instant::now();
        let mut olds: Vec<u64> = r.members().iter().map(|m| m.id).collect();
        for i in (1..olds.len()).rev() {
            let j = self.rng.below(i as u64 + 1) as usize;
            olds.swap(i, j);
        }
        let n = olds.len();
        let mut steps: Vec<String> = Vec::new();
        for (k, &old) in olds.iter().enumerate() {
            if k > 0 {
                // The clients of the last step move meanwhile (their
                // tracker's delay); other parts of a composition may act.
                sleep_until(Instant::now() + self.rng.ms(200, 1500));
            }
            match self.replace_one(r, old, t0) {
                Ok(step) => steps.push(step),
                Err(e) => {
                    let done = if steps.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", steps.join("; "))
                    };
                    return Err(io::Error::new(
                        e.kind(),
                        format!("replaced {k} of {n}{done}; then server {old}: {e}"),
                    ));
                }
            }
        }
        r.wait_quorum(Duration::from_secs(60))?;
        let now: Vec<String> = r.members().iter().map(|m| format!("{} ({})", m.id, m.addr)).collect();
        Ok(format!(
            "{n} servers replaced one by one on new ports in {} ms: {}; members now {}",
            ms_since(t0),
            steps.join("; "),
            now.join(", ")
        ))
    }

    /// One step: waits for a whole ensemble, replaces `old` under the
    /// handle, logs the members added and removed (also those of a step
    /// that failed halfway).
    fn replace_one(&self, r: &Reconf, old: u64, t0: Instant) -> io::Result<String> {
        let (mut e, waited) = r.whole(&self.switches.paused, WHOLE_PATIENCE)?;
        let before = r.members();
        if !before.iter().any(|m| m.id == old) {
            return Err(io::Error::other(format!("server {old} is no longer a member")));
        }
        let at = ms_since(t0);
        let step = r.replace(&mut e, old);
        drop(e);
        self.log_membership(&before, &r.members());
        let s = step?;
        Ok(format!(
            "server {} ({}{}) by {} ({}) at +{at} ms in {} ms{}",
            s.old,
            s.old_addr,
            s.old_mode.map_or(String::new(), |m| format!(", {m}")),
            s.new,
            s.new_addr,
            s.took.as_millis(),
            if waited >= Duration::from_millis(200) {
                format!(" (after {} ms for the ensemble to be whole)", waited.as_millis())
            } else {
                String::new()
            }
        ))
    }

    /// `EM t added ID ADDR` and `EM t removed ID ADDR` for the change from
    /// `before` to `after`.
    fn log_membership(&self, before: &[Member], after: &[Member]) {
        let t = now_ns();
        for m in after.iter().filter(|m| !before.contains(m)) {
            self.log.line(&format!("EM {t} added {} {}", m.id, m.addr));
        }
        for m in before.iter().filter(|m| !after.contains(m)) {
            self.log.line(&format!("EM {t} removed {} {}", m.id, m.addr));
        }
    }

    /// The member that leads (or a follower) now stopped or killed, and
    /// restarted 0.5-3 s later if it is still a member.
    pub(super) fn bounce_member(&mut self, leader: bool, kill: bool) -> io::Result<String> {
        let r = reconfigurable(self.server)?;
        let pick = self.rng.below(u64::MAX);
        let choose = move |n: usize| (pick % n as u64) as usize;
        let m = if kill {
            r.kill(leader, choose)?
        } else {
            r.stop(leader, choose)?
        };
        let (role, verb) = (
            if leader { "leader" } else { "follower" },
            if kill { "killed" } else { "stopped" },
        );
        let verb = format!("{verb}{}", waited_for_step(&m));
        let t0 = Instant::now();
        let down = self.rng.ms(500, 3000);
        sleep_until(t0 + down);
        match r.restart(m.id)? {
            None => Ok(format!(
                "server {} ({}, {role}) {verb} for {} ms; removed meanwhile by another part: not restarted",
                m.id,
                m.addr,
                down.as_millis()
            )),
            Some(waited) => {
                let serving = ms_since(t0);
                r.wait_quorum(Duration::from_secs(60))?;
                Ok(format!(
                    "server {} ({}, {role}) {verb} for {} ms, restarted{}: serving at +{serving} ms, a quorum at +{} ms",
                    m.id,
                    m.addr,
                    down.as_millis(),
                    if waited >= Duration::from_millis(100) {
                        format!(
                            " after {} ms more for the ensemble's handle (another part's replacement step or restart)",
                            waited.as_millis()
                        )
                    } else {
                        String::new()
                    },
                    ms_since(t0)
                ))
            }
        }
    }

    /// The member that leads now paused for `d` (SIGSTOP by its pid),
    /// counted in the pauses the parts share.
    pub(super) fn pause_member(&mut self, d: Duration) -> io::Result<String> {
        let r = reconfigurable(self.server)?;
        let (m, pid) = r.pause_leader(&self.switches.paused)?;
        sleep_until(Instant::now() + d);
        let resumed = self.resume_node(pid)?;
        Ok(format!(
            "leader {} ({}) paused{} {} ms{}",
            m.id,
            m.addr,
            waited_for_step(&m),
            d.as_millis(),
            kept_by_another(resumed)
        ))
    }
}

/// What a node fault says of its wait for the ensemble's handle before it
/// acted (another part's replacement step or restart; its window counts
/// from its act).
fn waited_for_step(m: &Member) -> String {
    if m.waited_for_handle >= Duration::from_millis(100) {
        format!(
            " (after {} ms for the ensemble's handle: another part's replacement step or restart)",
            m.waited_for_handle.as_millis()
        )
    } else {
        String::new()
    }
}
