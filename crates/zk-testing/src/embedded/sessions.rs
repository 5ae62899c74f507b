//! The session table: ids, passwords, negotiated timeouts and expiry deadlines.
//! Imports `clock` and the connection id; expiring a session (which deletes its
//! ephemerals and fires watches) is done by `state`.

use std::collections::HashMap;
use std::time::Instant;

use super::clock::Clock;
use super::conn::ConnId;
use super::util;

/// A live session.
#[derive(Debug)]
pub(crate) struct Session {
    pub passwd: Vec<u8>,
    /// Negotiated timeout, ms.
    pub timeout: i32,
    /// Expiry deadline, rounded up to a tick boundary.
    pub deadline: Instant,
    /// The connection currently bound to the session.
    pub conn: Option<ConnId>,
}

/// Every live session, and the source of new session ids.
#[derive(Debug)]
pub(crate) struct Sessions {
    map: HashMap<i64, Session>,
    next_id: i64,
}

impl Sessions {
    /// An empty table whose ids start, like the real server's, with serverId 1 in the
    /// top byte and then the clock.
    pub fn new(started_ms: i64) -> Sessions {
        Sessions {
            map: HashMap::new(),
            next_id: ((1u64 << 56) | (((started_ms as u64) << 24) >> 8)) as i64,
        }
    }

    /// Opens a session bound to `conn` and returns its id and password (derived from
    /// the id as the real server does).
    pub fn open(&mut self, timeout: i32, deadline: Instant, conn: ConnId) -> (i64, Vec<u8>) {
        self.next_id += 1;
        let mut sid = self.next_id;
        while sid == 0 || sid == i64::MIN || self.map.contains_key(&sid) {
            self.next_id += 1;
            sid = self.next_id;
        }
        let passwd = util::java_random_bytes(sid ^ 0xB341_5C00, 16);
        self.map.insert(
            sid,
            Session {
                passwd: passwd.clone(),
                timeout,
                deadline,
                conn: Some(conn),
            },
        );
        (sid, passwd)
    }

    pub fn get(&self, sid: &i64) -> Option<&Session> {
        self.map.get(sid)
    }

    pub fn get_mut(&mut self, sid: &i64) -> Option<&mut Session> {
        self.map.get_mut(sid)
    }

    pub fn contains(&self, sid: &i64) -> bool {
        self.map.contains_key(sid)
    }

    pub fn remove(&mut self, sid: &i64) -> Option<Session> {
        self.map.remove(sid)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&i64, &Session)> {
        self.map.iter()
    }

    /// Pushes the deadline of `sid` to `timeout` after `now`.
    pub fn touch(&mut self, clock: &Clock, sid: i64, now: Instant) {
        if let Some(s) = self.map.get_mut(&sid) {
            s.deadline = clock.deadline(now, s.timeout);
        }
    }

    /// Gives every session a fresh timeout (after a restart).
    pub fn reset_deadlines(&mut self, clock: &Clock, now: Instant) {
        for s in self.map.values_mut() {
            s.deadline = clock.deadline(now, s.timeout);
        }
    }

    /// The sessions whose deadline has passed, sorted by id.
    pub fn due(&self, now: Instant) -> Vec<i64> {
        let mut due: Vec<i64> = self
            .map
            .iter()
            .filter(|(_, s)| s.deadline <= now)
            .map(|(id, _)| *id)
            .collect();
        due.sort_unstable();
        due
    }
}
