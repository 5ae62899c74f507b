/// The lock name of `InterProcessMutex` nodes.
pub const MUTEX_LOCK_NAME: &str = "lock-";
/// The lock name of `LeaderLatch` nodes (Curator's `LeaderLatch.LOCK_NAME`).
pub const LATCH_LOCK_NAME: &str = "latch-";
/// The lock name of read nodes of an `InterProcessReadWriteLock`.
pub const READ_LOCK_NAME: &str = "__READ__";
/// The lock name of write nodes of an `InterProcessReadWriteLock`.
pub const WRITE_LOCK_NAME: &str = "__WRIT__";
/// The lock name of semaphore lease nodes.
pub const LEASE_NAME: &str = "lease-";

/// The semaphore's lease rule (Curator's `InterProcessSemaphoreV2`): our lease
/// is granted when at most `max_leases` lease nodes exist (counted, not
/// ordered: the holder of the internal mutex is the only one creating).
///
/// # Errors
///
/// [`NodeMissing`] when `ours` is not among the children.
///
/// # Examples
///
/// ```
/// use zk_recipes::lease_granted;
/// let kids: Vec<String> = vec!["_c_a-lease-0000000000".into(), "_c_b-lease-0000000001".into()];
/// assert_eq!(lease_granted(&kids, "_c_b-lease-0000000001", 2), Ok(true));
/// assert_eq!(lease_granted(&kids, "_c_b-lease-0000000001", 1), Ok(false));
/// ```
pub fn lease_granted(children: &[String], ours: &str, max_leases: usize) -> Result<bool, NodeMissing> {
    if !children.iter().any(|c| c == ours) {
        return Err(NodeMissing);
    }
    Ok(children.len() <= max_leases)
}

/// The downgrade rule (Curator 5.5+, CURATOR-621): the read node a write
/// holder creates to downgrade carries its write node's sequence (a plain
/// ephemeral node named `<lockName-prefix>__READ__<seq>`), so it sorts where
/// the write node is and keeps every later writer queued behind it once the
/// write node goes. Returns that sequence, or `None` when `write_node` (a name
/// or a path) is not a write node.
///
/// # Examples
///
/// ```
/// use zk_recipes::downgrade_sequence;
/// assert_eq!(downgrade_sequence("/l/_c_a-__WRIT__0000000007"), Some("0000000007"));
/// assert_eq!(downgrade_sequence("/l/_c_a-__READ__0000000007"), None);
/// ```
pub fn downgrade_sequence(write_node: &str) -> Option<&str> {
    let name = write_node.rsplit('/').next().unwrap_or(write_node);
    let i = name.rfind(WRITE_LOCK_NAME)?;
    let seq = &name[i + WRITE_LOCK_NAME.len()..];
    (!seq.is_empty() && seq.bytes().all(|b| b.is_ascii_digit())).then_some(seq)
}

/// The outcome of the predicate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Our node grants us the lock.
    Acquired,
    /// Wait for this node (a child name) to go away or change.
    Watch(String),
    /// Wait for the set of children to change (a semaphore's lease waits
    /// for any lease to go).
    WatchChildren,
}

/// Our own node is not among the children: the session that created it was
/// lost, or someone deleted it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeMissing;

/// What a waiter knows at the moment the node it watched is reported
/// deleted: the facts [`Driver::granted_on_deletion`] judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Deletion {
    /// The watched node was first in the queue when the waiter listed it
    /// (the holder).
    pub watched_was_head: bool,
    /// The watched node is known to have been granted the lock (the client
    /// granted it to another of its threads).
    pub watched_was_granted: bool,
    /// The waiter's own node is known to exist and is watched, so its
    /// deletion would have been reported before this event.
    pub own_node_watched: bool,
    /// The waiter's session is the one its node was created on, and no
    /// connection state changed since the watches were set (the events of
    /// re-registered watches need not come in order).
    pub steady_session: bool,
}

/// How nodes of a lock kind sort and decide.
///
/// # The rules
///
/// The lock decision, written once as pure functions: "do I hold it; else which
/// node do I watch". No server is involved, so every case is a table test.
///
/// Node names follow Curator: `_c_<uuid>-<lockName><10-digit sequence>`, sorted
/// by the text after the last occurrence of the lock name.
///
/// Taking a lock needs nothing from this module. It is public because it is
/// the specification of Curator's lock layout as code: a tool that reads a
/// lock's queue (which node holds it, who is next, for monitoring or an
/// interop check) can sort and judge the children exactly as the locks do; the
/// cross-crate tests use it to check queue order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    /// Curator's standard driver: the first `max_leases` nodes hold; a waiter
    /// watches the node `max_leases` places before it (its predecessor for a
    /// mutex).
    Standard {
        /// The lock name (for sorting).
        lock_name: &'static str,
        /// How many nodes may hold at once.
        max_leases: usize,
    },
    /// Read/write lock, write half: exclusive; sorts with the read/write rule and
    /// watches its immediate predecessor, reader or writer.
    Write,
    /// Read/write lock, read half: holds when no write node precedes it; a
    /// blocked reader watches the *nearest* write node before it, so a writer's
    /// release wakes only the readers it was blocking (Curator watches the first
    /// writer, which wakes every reader behind it).
    Read,
    /// A semaphore's lease (Curator's `InterProcessSemaphoreV2`): granted when
    /// at most `max_leases` lease nodes exist ([`lease_granted`]: counted,
    /// not ordered, as the internal mutex's holder is the only one
    /// creating); otherwise wait for the leases to change.
    Lease {
        /// How many leases may be out at once.
        max_leases: usize,
    },
}

impl Driver {
    /// The mutex driver (`lock-`, one holder).
    pub const MUTEX: Driver = Driver::Standard {
        lock_name: MUTEX_LOCK_NAME,
        max_leases: 1,
    };

    /// The leader latch driver (`latch-`, one leader): a mutex of latch
    /// nodes, sorted after the last `latch-` as Curator sorts them.
    pub const LATCH: Driver = Driver::Standard {
        lock_name: LATCH_LOCK_NAME,
        max_leases: 1,
    };

    /// Whether a waiter of this kind may be granted on its watched node's
    /// deletion alone, without listing the queue again (see
    /// [`granted_on_deletion`](Self::granted_on_deletion)): only a
    /// single-holder queue of one lock name, which only grows at its tail.
    /// (A read/write queue may gain a downgraded read node at the head's
    /// sequence; a semaphore counts, it does not order.)
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::Driver;
    /// assert!(Driver::MUTEX.grants_without_listing());
    /// assert!(!Driver::Write.grants_without_listing());
    /// ```
    pub fn grants_without_listing(&self) -> bool {
        matches!(self, Driver::Standard { max_leases: 1, .. })
    }

    /// The rule that lets a mutex queue hand over at one round trip: when the
    /// node a waiter watched is deleted, the waiter holds the lock without a
    /// new listing if the watched node held it (it was the head, or it was
    /// granted: at its grant every node before it was gone, and sequence
    /// numbers only grow, so none can come back), the waiter's own node is
    /// known to be still there, and the session was steady. Otherwise the
    /// waiter lists the queue again.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::{Deletion, Driver};
    /// let d = Deletion { watched_was_head: true, own_node_watched: true, steady_session: true, ..Default::default() };
    /// assert!(Driver::MUTEX.granted_on_deletion(d));
    /// assert!(!Driver::Write.granted_on_deletion(d));
    /// assert!(!Driver::MUTEX.granted_on_deletion(Deletion { own_node_watched: false, ..d }));
    /// ```
    pub fn granted_on_deletion(&self, d: Deletion) -> bool {
        self.grants_without_listing()
            && d.steady_session
            && d.own_node_watched
            && (d.watched_was_head || d.watched_was_granted)
    }

    /// The sort key of a child name.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::Driver;
    /// assert_eq!(Driver::MUTEX.sort_key("_c_x-lock-0000000003"), "0000000003");
    /// assert_eq!(Driver::Read.sort_key("_c_x-__WRIT__0000000004"), "0000000004");
    /// ```
    pub fn sort_key<'a>(&self, name: &'a str) -> &'a str {
        match self {
            Driver::Standard { lock_name, .. } => zk_framework::paths::fix_for_sorting(name, lock_name),
            Driver::Write | Driver::Read => rw_sort_key(name),
            Driver::Lease { .. } => zk_framework::paths::fix_for_sorting(name, LEASE_NAME),
        }
    }

    /// Sorts children as Curator does (stable, by [`Driver::sort_key`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::Driver;
    /// let mut v = vec!["a-__READ__0000000002".to_string(), "b-__WRIT__0000000001".to_string()];
    /// Driver::Write.sort(&mut v);
    /// assert_eq!(v[0], "b-__WRIT__0000000001");
    /// ```
    pub fn sort(&self, children: &mut [String]) {
        // Each key once (a search in the name), not twice per comparison: a
        // deep queue's listings are long.
        let mut keyed: Vec<(usize, String)> = children
            .iter_mut()
            .map(|c| (c.len() - self.sort_key(c).len(), std::mem::take(c)))
            .collect();
        keyed.sort_by(|(i, a), (j, b)| a[*i..].cmp(&b[*j..]));
        for (slot, (_, name)) in children.iter_mut().zip(keyed) {
            *slot = name;
        }
    }

    /// Decides for `ours` given the children, already sorted.
    ///
    /// # Errors
    ///
    /// [`NodeMissing`] when `ours` is not among the children.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::{Decision, Driver};
    /// let kids: Vec<String> = vec!["_c_a-lock-0000000000".into(), "_c_b-lock-0000000001".into()];
    /// assert_eq!(Driver::MUTEX.decide(&kids, "_c_a-lock-0000000000"), Ok(Decision::Acquired));
    /// assert_eq!(Driver::MUTEX.decide(&kids, "_c_b-lock-0000000001"), Ok(Decision::Watch("_c_a-lock-0000000000".into())));
    /// ```
    pub fn decide(&self, sorted: &[String], ours: &str) -> Result<Decision, NodeMissing> {
        match self {
            Driver::Standard { max_leases, .. } => standard(sorted, ours, *max_leases),
            Driver::Write => standard(sorted, ours, 1),
            Driver::Read => {
                let mut nearest_writer: Option<&String> = None;
                for name in sorted {
                    if name == ours {
                        return Ok(match nearest_writer {
                            None => Decision::Acquired,
                            Some(w) => Decision::Watch(w.clone()),
                        });
                    }
                    if name.contains(WRITE_LOCK_NAME) {
                        nearest_writer = Some(name);
                    }
                }
                Err(NodeMissing)
            }
            Driver::Lease { max_leases } => Ok(if lease_granted(sorted, ours, *max_leases)? {
                Decision::Acquired
            } else {
                Decision::WatchChildren
            }),
        }
    }

    /// [`decide`](Self::decide) on a listing as the server returned it: the
    /// same decision as [`sort`](Self::sort) then `decide`, and whether the
    /// node to watch is the head of the sorted queue. A single-holder queue
    /// (a mutex, a write lock) and a read lock decide in one pass over the
    /// names, without sorting or moving them (a deep queue's listing is long);
    /// the other drivers sort `children` in place first.
    ///
    /// # Errors
    ///
    /// [`NodeMissing`] when `ours` is not among the children.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::{Decision, Driver};
    /// let mut kids: Vec<String> = vec![
    ///     "_c_c-lock-0000000002".into(),
    ///     "_c_a-lock-0000000000".into(),
    ///     "_c_b-lock-0000000001".into(),
    /// ];
    /// assert_eq!(
    ///     Driver::MUTEX.decide_unsorted(&mut kids, "_c_c-lock-0000000002"),
    ///     Ok((Decision::Watch("_c_b-lock-0000000001".into()), false))
    /// );
    /// assert_eq!(
    ///     Driver::MUTEX.decide_unsorted(&mut kids, "_c_b-lock-0000000001"),
    ///     Ok((Decision::Watch("_c_a-lock-0000000000".into()), true))
    /// );
    /// ```
    pub fn decide_unsorted(&self, children: &mut [String], ours: &str) -> Result<(Decision, bool), NodeMissing> {
        let writers_only = match self {
            Driver::Standard { max_leases, .. } if *max_leases <= 1 => false,
            Driver::Write => false,
            Driver::Read => true,
            _ => {
                self.sort(children);
                let decision = self.decide(children, ours)?;
                let head = matches!(&decision, Decision::Watch(p) if children.first() == Some(p));
                return Ok((decision, head));
            }
        };
        // Sorted order is by key, then (a stable sort) by listing position.
        let at = children.iter().position(|n| n == ours).ok_or(NodeMissing)?;
        let our_key = self.sort_key(ours);
        let mut head: Option<(&str, usize)> = None;
        let mut ahead: Option<(&str, usize)> = None;
        for (i, name) in children.iter().enumerate() {
            let key = self.sort_key(name);
            if head.map_or(true, |(k, _)| key < k) {
                head = Some((key, i));
            }
            let before = key < our_key || (key == our_key && i < at);
            if before && (!writers_only || name.contains(WRITE_LOCK_NAME)) && ahead.map_or(true, |(k, _)| key >= k) {
                ahead = Some((key, i));
            }
        }
        Ok(match ahead {
            None => (Decision::Acquired, false),
            Some((_, i)) => (Decision::Watch(children[i].clone()), head.is_some_and(|(_, h)| h == i)),
        })
    }
}

fn standard(sorted: &[String], ours: &str, max_leases: usize) -> Result<Decision, NodeMissing> {
    let index = sorted.iter().position(|n| n == ours).ok_or(NodeMissing)?;
    let max_leases = max_leases.max(1);
    if index < max_leases {
        Ok(Decision::Acquired)
    } else {
        Ok(Decision::Watch(sorted[index - max_leases].clone()))
    }
}

/// Curator's read/write sort key: strip through the last `__READ__`, then
/// through the last `__WRIT__`.
///
/// # Examples
///
/// ```
/// assert_eq!(zk_recipes::rw_sort_key("_c_u-__READ__0000000009"), "0000000009");
/// ```
pub fn rw_sort_key(name: &str) -> &str {
    let s = zk_framework::paths::fix_for_sorting(name, READ_LOCK_NAME);
    zk_framework::paths::fix_for_sorting(s, WRITE_LOCK_NAME)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// `decide_unsorted` decides as `sort` then `decide` do, on shuffled
    /// listings (unique names, as a server lists them) with equal keys,
    /// foreign names, readers and writers, for
    /// every driver and every node of the listing (and one not in it).
    #[test]
    fn deciding_unsorted_is_deciding_sorted() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let drivers = [
            Driver::MUTEX,
            Driver::Write,
            Driver::Read,
            Driver::Standard {
                lock_name: LEASE_NAME,
                max_leases: 3,
            },
            Driver::Lease { max_leases: 2 },
        ];
        for round in 0..400 {
            let len = 1 + next(12);
            let mut kids: Vec<String> = (0..len)
                .map(|i| {
                    let seq = format!("{:010}", next(8));
                    match next(6) {
                        0 => format!("_c_{i}-lock-{seq}"),
                        1 => format!("_c_{i}-{READ_LOCK_NAME}{seq}"),
                        2 => format!("_c_{i}-{WRITE_LOCK_NAME}{seq}"),
                        3 => format!("_c_{i}-{LEASE_NAME}{seq}"),
                        4 => format!("stray-{i}"),
                        _ => format!("n{i}-lock-{seq}"),
                    }
                })
                .collect();
            for d in &drivers {
                for ours in kids.clone().iter().chain(std::iter::once(&"absent".to_string())) {
                    let mut sorted = kids.clone();
                    d.sort(&mut sorted);
                    let want = d.decide(&sorted, ours).map(|dec| {
                        let head = matches!(&dec, Decision::Watch(p) if sorted.first() == Some(p));
                        (dec, head)
                    });
                    let mut listing = kids.clone();
                    assert_eq!(
                        d.decide_unsorted(&mut listing, ours),
                        want,
                        "round {round}, {d:?}, ours {ours}, listing {kids:?}, sorted {sorted:?}"
                    );
                }
            }
            let i = next(kids.len());
            kids.swap(0, i);
        }
    }

    #[test]
    fn grant_on_deletion_table() {
        let all = Deletion {
            watched_was_head: true,
            watched_was_granted: true,
            own_node_watched: true,
            steady_session: true,
        };
        let sem = Driver::Standard {
            lock_name: LEASE_NAME,
            max_leases: 2,
        };
        let table: &[(Driver, Deletion, bool)] = &[
            (Driver::MUTEX, all, true),
            // The head held the lock; a node granted before held it too.
            (
                Driver::MUTEX,
                Deletion {
                    watched_was_granted: false,
                    ..all
                },
                true,
            ),
            (
                Driver::MUTEX,
                Deletion {
                    watched_was_head: false,
                    ..all
                },
                true,
            ),
            // A waiter watching another waiter: it must list again.
            (
                Driver::MUTEX,
                Deletion {
                    watched_was_head: false,
                    watched_was_granted: false,
                    ..all
                },
                false,
            ),
            // Our own node may be gone: list.
            (
                Driver::MUTEX,
                Deletion {
                    own_node_watched: false,
                    ..all
                },
                false,
            ),
            // A reconnect or a new session: list.
            (
                Driver::MUTEX,
                Deletion {
                    steady_session: false,
                    ..all
                },
                false,
            ),
            // Other kinds always list.
            (Driver::Write, all, false),
            (Driver::Read, all, false),
            (sem, all, false),
            (Driver::MUTEX, Deletion::default(), false),
        ];
        for (driver, d, want) in table {
            assert_eq!(driver.granted_on_deletion(*d), *want, "{driver:?} {d:?}");
        }
    }

    #[test]
    fn lease_predicate_table() {
        let kids = names(&[
            "_c_a-lease-0000000000",
            "_c_b-lease-0000000001",
            "_c_c-lease-0000000002",
        ]);
        let table: &[(usize, &str, Result<Decision, NodeMissing>)] = &[
            (3, "_c_c-lease-0000000002", Ok(Decision::Acquired)),
            (5, "_c_a-lease-0000000000", Ok(Decision::Acquired)),
            (2, "_c_c-lease-0000000002", Ok(Decision::WatchChildren)),
            // Counted, not ordered: the first node waits too when there are
            // more leases than allowed.
            (2, "_c_a-lease-0000000000", Ok(Decision::WatchChildren)),
            (3, "_c_z-lease-0000000009", Err(NodeMissing)),
        ];
        for (max_leases, ours, want) in table {
            let d = Driver::Lease {
                max_leases: *max_leases,
            };
            assert_eq!(&d.decide(&kids, ours), want, "{max_leases} {ours}");
        }
        assert!(!Driver::Lease { max_leases: 1 }.grants_without_listing());
    }

    #[test]
    fn standard_predicate_table() {
        let kids = names(&["_c_a-lock-0000000000", "_c_b-lock-0000000001", "_c_c-lock-0000000002"]);
        let table: &[(Driver, &str, Result<Decision, NodeMissing>)] = &[
            (Driver::MUTEX, "_c_a-lock-0000000000", Ok(Decision::Acquired)),
            (
                Driver::MUTEX,
                "_c_b-lock-0000000001",
                Ok(Decision::Watch("_c_a-lock-0000000000".into())),
            ),
            (
                Driver::MUTEX,
                "_c_c-lock-0000000002",
                Ok(Decision::Watch("_c_b-lock-0000000001".into())),
            ),
            (Driver::MUTEX, "_c_z-lock-0000000009", Err(NodeMissing)),
            (
                Driver::Standard {
                    lock_name: "lock-",
                    max_leases: 2,
                },
                "_c_b-lock-0000000001",
                Ok(Decision::Acquired),
            ),
            (
                Driver::Standard {
                    lock_name: "lock-",
                    max_leases: 2,
                },
                "_c_c-lock-0000000002",
                Ok(Decision::Watch("_c_a-lock-0000000000".into())),
            ),
            (
                Driver::Standard {
                    lock_name: "lock-",
                    max_leases: 0,
                },
                "_c_a-lock-0000000000",
                Ok(Decision::Acquired),
            ),
        ];
        for (driver, ours, want) in table {
            assert_eq!(&driver.decide(&kids, ours), want, "{driver:?} {ours}");
        }
        assert_eq!(Driver::MUTEX.decide(&[], "x"), Err(NodeMissing));
    }

    #[test]
    fn read_write_predicate_table() {
        // Queue: R0 W1 R2 R3 W4 R5 (downgraded R with W1's sequence sits next to W1).
        let mut kids = names(&[
            "_c_5-__READ__0000000005",
            "_c_0-__READ__0000000000",
            "_c_4-__WRIT__0000000004",
            "_c_1-__WRIT__0000000001",
            "_c_3-__READ__0000000003",
            "_c_2-__READ__0000000002",
        ]);
        Driver::Read.sort(&mut kids);
        assert_eq!(
            kids,
            names(&[
                "_c_0-__READ__0000000000",
                "_c_1-__WRIT__0000000001",
                "_c_2-__READ__0000000002",
                "_c_3-__READ__0000000003",
                "_c_4-__WRIT__0000000004",
                "_c_5-__READ__0000000005",
            ])
        );
        let w = |s: &str| Ok(Decision::Watch(s.to_string()));
        let table: &[(Driver, &str, Result<Decision, NodeMissing>)] = &[
            (Driver::Read, "_c_0-__READ__0000000000", Ok(Decision::Acquired)),
            (Driver::Read, "_c_2-__READ__0000000002", w("_c_1-__WRIT__0000000001")),
            (Driver::Read, "_c_3-__READ__0000000003", w("_c_1-__WRIT__0000000001")),
            // Herd-free: the reader after the second writer watches the nearest one.
            (Driver::Read, "_c_5-__READ__0000000005", w("_c_4-__WRIT__0000000004")),
            (Driver::Write, "_c_1-__WRIT__0000000001", w("_c_0-__READ__0000000000")),
            (Driver::Write, "_c_4-__WRIT__0000000004", w("_c_3-__READ__0000000003")),
            (Driver::Read, "_c_9-__READ__0000000009", Err(NodeMissing)),
        ];
        for (driver, ours, want) in table {
            assert_eq!(&driver.decide(&kids, ours), want, "{driver:?} {ours}");
        }
    }

    #[test]
    fn curator_5_4_downgrade_layout_is_tolerated() {
        // Probe.out (Curator 5.4, CURATOR-621): the holder's downgraded read node is an
        // ordinary sequential node behind the queued writer and reader.
        let mut kids = names(&[
            "_c_h2-__READ__0000000003",
            "_c_r2-__READ__0000000002",
            "_c_w2-__WRIT__0000000001",
            "_c_h1-__WRIT__0000000000",
        ]);
        Driver::Read.sort(&mut kids);
        assert_eq!(kids[0], "_c_h1-__WRIT__0000000000");
        let w = |s: &str| Ok(Decision::Watch(s.to_string()));
        assert_eq!(
            Driver::Write.decide(&kids, "_c_h1-__WRIT__0000000000"),
            Ok(Decision::Acquired)
        );
        assert_eq!(
            Driver::Write.decide(&kids, "_c_w2-__WRIT__0000000001"),
            w("_c_h1-__WRIT__0000000000")
        );
        // Our readers there wait for the nearest writer, not for the holder.
        assert_eq!(
            Driver::Read.decide(&kids, "_c_r2-__READ__0000000002"),
            w("_c_w2-__WRIT__0000000001")
        );
        assert_eq!(
            Driver::Read.decide(&kids, "_c_h2-__READ__0000000003"),
            w("_c_w2-__WRIT__0000000001")
        );
        // Once the holder's write node goes, w2 gets in (the 5.4 bug is the holder's).
        kids.remove(0);
        assert_eq!(
            Driver::Write.decide(&kids, "_c_w2-__WRIT__0000000001"),
            Ok(Decision::Acquired)
        );
    }

    #[test]
    fn downgraded_read_node_blocks_later_writers() {
        // Curator 5.5+ downgrade: an ephemeral read node carrying the write node's
        // sequence. After the write node goes, a queued writer must still wait.
        let mut kids = names(&[
            "_c_w2-__WRIT__0000000007",
            "_c_dg-__READ__0000000005",
            "_c_r9-__READ__0000000008",
        ]);
        Driver::Write.sort(&mut kids);
        assert_eq!(
            Driver::Read.decide(&kids, "_c_dg-__READ__0000000005"),
            Ok(Decision::Acquired)
        );
        assert_eq!(
            Driver::Write.decide(&kids, "_c_w2-__WRIT__0000000007"),
            Ok(Decision::Watch("_c_dg-__READ__0000000005".into()))
        );
        assert_eq!(
            Driver::Read.decide(&kids, "_c_r9-__READ__0000000008"),
            Ok(Decision::Watch("_c_w2-__WRIT__0000000007".into()))
        );
        // Ties between the write node and its downgraded read node keep list order
        // (stable sort); either order is safe for other contenders.
        let mut tie = names(&[
            "_c_b-__READ__0000000005",
            "_c_a-__WRIT__0000000005",
            "_c_c-__WRIT__0000000006",
        ]);
        Driver::Write.sort(&mut tie);
        assert_eq!(tie[0], "_c_b-__READ__0000000005");
        assert_eq!(
            Driver::Write.decide(&tie, "_c_c-__WRIT__0000000006"),
            Ok(Decision::Watch("_c_a-__WRIT__0000000005".into()))
        );
    }

    #[test]
    fn lease_rule_table() {
        let kids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // (children, ours, max_leases, expected)
        type Case<'a> = (Vec<String>, &'a str, usize, Result<bool, NodeMissing>);
        let cases: Vec<Case<'_>> = vec![
            (kids(&["a-lease-0000000000"]), "a-lease-0000000000", 1, Ok(true)),
            (
                kids(&["a-lease-0000000000", "b-lease-0000000001"]),
                "b-lease-0000000001",
                1,
                Ok(false),
            ),
            (
                kids(&["a-lease-0000000000", "b-lease-0000000001"]),
                "a-lease-0000000000",
                1,
                Ok(false),
            ),
            (
                kids(&["a-lease-0000000000", "b-lease-0000000001"]),
                "b-lease-0000000001",
                2,
                Ok(true),
            ),
            (
                kids(&["a-lease-0000000000", "b-lease-0000000001", "c-lease-0000000002"]),
                "c-lease-0000000002",
                2,
                Ok(false),
            ),
            (kids(&["a-lease-0000000000"]), "z-lease-0000000009", 3, Err(NodeMissing)),
            (kids(&[]), "a-lease-0000000000", 1, Err(NodeMissing)),
        ];
        for (children, ours, max, want) in cases {
            assert_eq!(lease_granted(&children, ours, max), want, "{children:?} {ours} {max}");
        }
    }

    #[test]
    fn downgrade_rule_table() {
        // (write node, sequence the downgraded read node carries)
        let cases: &[(&str, Option<&str>)] = &[
            ("_c_a-__WRIT__0000000007", Some("0000000007")),
            ("/locks/x/_c_a-__WRIT__0000000123", Some("0000000123")),
            // A base path containing the tag does not confuse it.
            ("/__WRIT__/_c_a-__WRIT__0000000001", Some("0000000001")),
            ("_c_a-__READ__0000000007", None),
            ("_c_a-lock-0000000007", None),
            ("_c_a-__WRIT__", None),
            ("_c_a-__WRIT__12x", None),
        ];
        for (node, want) in cases {
            assert_eq!(downgrade_sequence(node), *want, "{node}");
        }
        // The downgraded node sorts where the write node was: ahead of a writer
        // queued behind it, which therefore keeps waiting.
        let seq = downgrade_sequence("_c_w1-__WRIT__0000000004").unwrap();
        let read = format!("_c_dg-{READ_LOCK_NAME}{seq}");
        let mut kids = names(&[&read, "_c_w2-__WRIT__0000000006"]);
        Driver::Write.sort(&mut kids);
        assert_eq!(Driver::Read.decide(&kids, &read), Ok(Decision::Acquired));
        assert_eq!(
            Driver::Write.decide(&kids, "_c_w2-__WRIT__0000000006"),
            Ok(Decision::Watch(read.clone()))
        );
    }
}
