//! The client's server list and which server it tries next: round robin over
//! the list, and, when the list changes ([`HostProvider::update`]),
//! ZooKeeper's probabilistic rebalancing (`StaticHostProvider.updateServerList`,
//! ZOOKEEPER-1355): only as many clients move as balance the new list, and
//! those that move go to the servers that need them.
//!
//! The decision, with `S` the current list (N servers), `L` the new one
//! (M servers: `old` the ones also in `S`, `new` the others) and `c` the
//! server of the current connection:
//!
//! | case | decision |
//! |---|---|
//! | M > N, `c` in L | move with probability 1 − N/M, to a `new` server |
//! | M > N, `c` not in L | move, to a `new` server |
//! | M ≤ N, `c` in L | stay |
//! | M ≤ N, `c` not in L | move: to an `old` server with probability \|old\|·(N − M) / (M·(N − \|old\|)), else to a `new` one |
//!
//! A move keeps the session: the connection is dropped and the next attempts
//! draw from `new` or `old` with those odds (each server tried once), then go
//! round robin over the whole new list again.

use std::net::SocketAddr;

use super::connect_string::HostPort;

/// A small xorshift generator: the odds need no cryptographic randomness,
/// and a seed makes a test's draws repeatable.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn seeded(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    fn random() -> Rng {
        use std::hash::BuildHasher;
        Rng::seeded(std::collections::hash_map::RandomState::new().hash_one(0u8))
    }

    fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = (self.next_u64() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
    }
}

/// The odds of a move in progress.
#[derive(Debug, Clone)]
struct Moving {
    old: Vec<HostPort>,
    new: Vec<HostPort>,
    /// The probability of trying a `new` server next.
    p_new: f64,
    tried_old: usize,
    tried_new: usize,
}

/// What [`HostProvider::update`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// The current connection stays.
    Stay,
    /// The connection moves (it is to be dropped; the session is kept).
    Move,
}

/// The server list and the choice of the next server.
#[derive(Debug, Clone)]
pub(crate) struct HostProvider {
    hosts: Vec<HostPort>,
    next: usize,
    /// The server of the current (or last) connection and its address.
    current: Option<(HostPort, SocketAddr)>,
    moving: Option<Moving>,
    rng: Rng,
}

impl HostProvider {
    /// A provider over `hosts` (not empty), in random order.
    pub(crate) fn new(hosts: Vec<HostPort>) -> HostProvider {
        HostProvider::with_rng(hosts, Rng::random())
    }

    /// A provider whose draws follow `seed` (tests).
    #[cfg(test)]
    pub(crate) fn seeded(hosts: Vec<HostPort>, seed: u64) -> HostProvider {
        HostProvider::with_rng(hosts, Rng::seeded(seed))
    }

    fn with_rng(mut hosts: Vec<HostPort>, mut rng: Rng) -> HostProvider {
        rng.shuffle(&mut hosts);
        HostProvider {
            hosts,
            next: 0,
            current: None,
            moving: None,
            rng,
        }
    }

    /// How many servers the list has.
    pub(crate) fn len(&self) -> usize {
        self.hosts.len()
    }

    /// The list, in the order it is tried.
    pub(crate) fn hosts(&self) -> &[HostPort] {
        &self.hosts
    }

    /// The server of the current or last connection.
    pub(crate) fn current(&self) -> Option<&HostPort> {
        self.current.as_ref().map(|(h, _)| h)
    }

    /// The server to try next.
    pub(crate) fn next(&mut self) -> HostPort {
        if let Some(m) = &mut self.moving {
            let untried_new = m.tried_new < m.new.len();
            let untried_old = m.tried_old < m.old.len();
            if untried_new || untried_old {
                let u = self.rng.unit();
                let take_new = untried_new && (u < m.p_new || !untried_old);
                let h = if take_new {
                    m.tried_new += 1;
                    m.new[m.tried_new - 1].clone()
                } else {
                    m.tried_old += 1;
                    m.old[m.tried_old - 1].clone()
                };
                return h;
            }
            // Every server of the move was tried: round robin again.
            self.moving = None;
        }
        let h = self.hosts[self.next % self.hosts.len()].clone();
        self.next = (self.next + 1) % self.hosts.len();
        h
    }

    /// A connection to `host` (at `addr`) was made: a move ends.
    pub(crate) fn on_connected(&mut self, host: &HostPort, addr: SocketAddr) {
        self.moving = None;
        self.current = Some((host.clone(), addr));
        if let Some(i) = self.hosts.iter().position(|h| h == host) {
            self.next = (i + 1) % self.hosts.len();
        }
    }

    /// Whether `c` is the server `h` names: the same port, and the same host
    /// string or one of `h`'s addresses (`resolved`, looked up before the
    /// provider's lock is taken).
    fn same_server(c: &(HostPort, SocketAddr), h: &HostPort, resolved: &[(HostPort, Vec<SocketAddr>)]) -> bool {
        if c.0.port != h.port && c.1.port() != h.port {
            return false;
        }
        c.0 == *h
            || resolved
                .iter()
                .filter(|(r, _)| r == h)
                .any(|(_, addrs)| addrs.iter().any(|a| a.ip() == c.1.ip()))
    }

    /// Looks up the addresses of `hosts` (DNS for names; a name that does
    /// not resolve has none), for [`HostProvider::update`].
    pub(crate) fn resolve_all(hosts: &[HostPort]) -> Vec<(HostPort, Vec<SocketAddr>)> {
        hosts
            .iter()
            .map(|h| (h.clone(), h.resolve().unwrap_or_default()))
            .collect()
    }

    /// Takes `new_hosts` (not empty; their addresses `resolved` by
    /// [`HostProvider::resolve_all`]) as the list and decides whether the
    /// current connection moves (ZooKeeper's rule, see the module doc).
    pub(crate) fn update(&mut self, new_hosts: Vec<HostPort>, resolved: &[(HostPort, Vec<SocketAddr>)]) -> Decision {
        debug_assert!(!new_hosts.is_empty());
        let mut list = new_hosts;
        list.dedup();
        self.rng.shuffle(&mut list);
        let n = self.hosts.len();
        let m = list.len();
        let (old, new): (Vec<HostPort>, Vec<HostPort>) = list.iter().cloned().partition(|h| self.hosts.contains(h));
        let current = self.current.clone();
        let c_in_list = current
            .as_ref()
            .is_some_and(|c| list.iter().any(|h| Self::same_server(c, h, resolved)));
        let decision = if m > n {
            if c_in_list {
                let p_move = 1.0 - n as f64 / m as f64;
                if self.rng.unit() < p_move {
                    Some(1.0)
                } else {
                    None
                }
            } else {
                Some(1.0)
            }
        } else if c_in_list {
            None
        } else if n == old.len() {
            // Java's 0/0: walk the old servers.
            Some(0.0)
        } else {
            let p_old = (old.len() * (n - m)) as f64 / (m * (n - old.len())) as f64;
            Some((1.0 - p_old).clamp(0.0, 1.0))
        };
        self.hosts = list;
        match decision {
            None => {
                // Stay: keep the position after the current server.
                if let Some(c) = &current {
                    if let Some(i) = self.hosts.iter().position(|h| Self::same_server(c, h, resolved)) {
                        self.next = (i + 1) % self.hosts.len();
                    }
                }
                self.moving = None;
                Decision::Stay
            }
            Some(p_new) => {
                self.next = 0;
                self.moving = Some(Moving {
                    old,
                    new,
                    p_new,
                    tried_old: 0,
                    tried_new: 0,
                });
                Decision::Move
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hp(port: u16) -> HostPort {
        HostPort {
            host: "127.0.0.1".into(),
            port,
        }
    }

    fn list(ports: &[u16]) -> Vec<HostPort> {
        ports.iter().map(|&p| hp(p)).collect()
    }

    fn connected(ports: &[u16], at: u16, seed: u64) -> HostProvider {
        let mut p = HostProvider::seeded(list(ports), seed);
        p.on_connected(&hp(at), SocketAddr::from(([127, 0, 0, 1], at)));
        p
    }

    #[test]
    fn round_robin_over_the_list() {
        let mut p = HostProvider::seeded(list(&[1, 2, 3]), 7);
        let mut seen: Vec<u16> = (0..6).map(|_| p.next().port).collect();
        assert_eq!(seen[..3], seen[3..]);
        seen.truncate(3);
        seen.sort();
        assert_eq!(seen, vec![1, 2, 3]);
    }

    /// The table of ZooKeeper's rule, each case over many seeds: the share of
    /// clients that move, and where the movers go.
    #[test]
    fn the_rule_as_a_table() {
        /// (current list, connected to, new list, expected share moving,
        /// share of the movers that go to new servers)
        type Case = (&'static [u16], u16, &'static [u16], f64, f64);
        let table: &[Case] = &[
            // 3 → 5: each moves with probability 1 − 3/5, to the new ones.
            (&[1, 2, 3], 1, &[1, 2, 3, 4, 5], 0.4, 1.0),
            // 5 → 3 (4 and 5 removed): a client of a survivor stays...
            (&[1, 2, 3, 4, 5], 1, &[1, 2, 3], 0.0, 0.0),
            // ... a client of a removed server moves, to the survivors.
            (&[1, 2, 3, 4, 5], 4, &[1, 2, 3], 1.0, 0.0),
            // One of 3 replaced (3 by 6): its clients all go to the new one.
            (&[1, 2, 3], 3, &[1, 2, 6], 1.0, 1.0),
            // ... the others stay.
            (&[1, 2, 3], 1, &[1, 2, 6], 0.0, 0.0),
            // Every server replaced: everyone moves, to the new ones.
            (&[1, 2, 3], 2, &[7, 8, 9], 1.0, 1.0),
            // The same list: nobody moves.
            (&[1, 2, 3], 2, &[3, 2, 1], 0.0, 0.0),
        ];
        for &(from, at, to, share, to_new) in table {
            let runs = 4000;
            let (mut moved, mut went_new) = (0, 0);
            for seed in 0..runs {
                let mut p = connected(from, at, seed * 2 + 1);
                if p.update(list(to), &HostProvider::resolve_all(&list(to))) == Decision::Move {
                    moved += 1;
                    if !from.contains(&p.next().port) {
                        went_new += 1;
                    }
                }
            }
            let got = moved as f64 / runs as f64;
            assert!(
                (got - share).abs() < 0.05,
                "{from:?}@{at} → {to:?}: {got} moved, expected {share}"
            );
            if moved > 0 {
                let got_new = went_new as f64 / moved as f64;
                assert!(
                    (got_new - to_new).abs() < 0.05,
                    "{from:?}@{at} → {to:?}: {got_new} of the movers to new servers, expected {to_new}"
                );
            }
        }
    }

    #[test]
    fn a_move_tries_each_server_once_then_round_robins() {
        let mut p = connected(&[1, 2, 3], 3, 11);
        assert_eq!(p.update(list(&[1, 2, 6]), &[]), Decision::Move);
        let mut tried: Vec<u16> = (0..3).map(|_| p.next().port).collect();
        assert_eq!(tried[0], 6);
        tried.sort();
        assert_eq!(tried, vec![1, 2, 6]);
        // Round robin over the new list after that.
        let mut again: Vec<u16> = (0..3).map(|_| p.next().port).collect();
        again.sort();
        assert_eq!(again, vec![1, 2, 6]);
        assert_eq!(p.len(), 3);
    }

    #[test]
    fn stay_keeps_the_position_after_the_current_server() {
        let mut p = connected(&[1, 2, 3], 2, 5);
        assert_eq!(p.update(list(&[1, 2]), &[]), Decision::Stay);
        assert_eq!(p.next().port, 1);
        assert_eq!(p.current().map(|h| h.port), Some(2));
    }

    #[test]
    fn not_connected_yet_counts_as_not_in_the_list() {
        let mut p = HostProvider::seeded(list(&[1, 2, 3]), 3);
        assert_eq!(p.update(list(&[4]), &[]), Decision::Move);
        assert_eq!(p.next().port, 4);
    }
}
