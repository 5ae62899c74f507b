//! DistributedBarrier and DistributedDoubleBarrier: Curator's layouts, waits
//! that end at the removal, the deadline or the close, the double barrier
//! with one client per member, GH-1290 (never through with too few members),
//! no orphan member node after a timed-out enter, and bad input. Embedded by
//! default; `ZK_TEST_SERVER=apache` runs them on Apache ZooKeeper.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::support::{client, connect, proxied_client, server, timing};
use zk_recipes::{DistributedBarrier, DistributedDoubleBarrier, Error};
use zk_testing::proxy::FaultProxy;
use zk_testing::wait_until;

/// How late a timed wait may return after its deadline on a loaded machine.
const MARGIN: Duration = Duration::from_millis(500);

fn children(c: &zk_framework::CuratorFramework, path: &str) -> Vec<String> {
    let mut k = c.get_children(path).unwrap_or_default();
    k.sort();
    k
}

fn is_uuid(name: &str) -> bool {
    name.len() == 36
        && name.char_indices().all(|(i, ch)| {
            if [8, 13, 18, 23].contains(&i) {
                ch == '-'
            } else {
                ch.is_ascii_hexdigit()
            }
        })
}

#[test]
fn barrier_layout_wait_release_and_timeout() {
    let s = server();
    let (a, b) = (connect(&s.connect_string()), connect(&s.connect_string()));
    let ba = DistributedBarrier::new(&a, "/barriers/one").unwrap();
    let bb = DistributedBarrier::new(&b, "/barriers/one").unwrap();
    // Down: passes at once.
    assert!(bb.wait_on_barrier_for(Duration::ZERO).unwrap());
    ba.set_barrier().unwrap();
    ba.set_barrier().unwrap();
    // Curator's layout: the node itself, PERSISTENT, the client's default data.
    let (data, stat) = a.get_data("/barriers/one").unwrap();
    assert_eq!(data, a.default_data());
    assert_eq!(stat.ephemeral_owner, 0);
    assert!(bb.is_set().unwrap());

    // A timeout is a value, returned at the deadline (not before, not much after).
    let deadline = Instant::now() + Duration::from_millis(200);
    assert!(!bb.wait_on_barrier_until(deadline).unwrap());
    let now = Instant::now();
    assert!(now >= deadline, "returned before its deadline");
    assert!(now <= deadline + MARGIN, "returned {:?} late", now - deadline);

    // A waiter is released by the removal.
    std::thread::scope(|sc| {
        let waiter = sc.spawn(|| bb.wait_on_barrier_for(timing().wait()));
        // Its watch is set before we remove (else the test proves less).
        assert!(wait_until(timing().wait(), || !waiter.is_finished()
            && a.get_data("/barriers/one").is_ok()));
        let removed = Instant::now();
        ba.remove_barrier().unwrap();
        assert!(waiter.join().unwrap().unwrap(), "released");
        assert!(
            removed.elapsed() <= MARGIN,
            "released {:?} after the removal",
            removed.elapsed()
        );
    });
    ba.remove_barrier().unwrap();
    assert!(!ba.is_set().unwrap());
}

#[test]
fn barrier_wait_ends_at_the_close_and_after_it() {
    let s = server();
    let c = client(&s);
    let b = DistributedBarrier::new(&c, "/barriers/closing").unwrap();
    b.set_barrier().unwrap();
    std::thread::scope(|sc| {
        let waiter = sc.spawn(|| b.wait_on_barrier());
        assert!(wait_until(timing().wait(), || !waiter.is_finished()));
        let closed = Instant::now();
        c.close();
        let r = waiter.join().unwrap();
        assert_eq!(r, Err(Error::ZooKeeper(zk_framework::Error::Closed)));
        assert!(closed.elapsed() <= MARGIN);
    });
    let closed = Err(Error::ZooKeeper(zk_framework::Error::Closed));
    assert_eq!(b.wait_on_barrier_for(timing().wait()), closed.clone().map(|()| true));
    assert_eq!(b.set_barrier(), closed.clone());
    assert_eq!(b.remove_barrier(), closed);
    assert!(DistributedBarrier::new(&c, "/").is_err());
    assert!(DistributedBarrier::new(&c, "relative").is_err());
}

#[test]
fn double_barrier_n_members_on_n_clients_enter_and_leave_together() {
    const N: usize = 4;
    let s = server();
    let clients: Vec<_> = (0..N).map(|_| connect(&s.connect_string())).collect();
    let admin = connect(&s.connect_string());
    let entered = AtomicUsize::new(0);
    let arrived = AtomicUsize::new(0);
    let left = AtomicUsize::new(0);
    std::thread::scope(|sc| {
        let threads: Vec<_> = clients
            .iter()
            .map(|c| {
                let (entered, arrived, left) = (&entered, &arrived, &left);
                sc.spawn(move || {
                    let b = DistributedDoubleBarrier::new(c, "/barriers/double", N).unwrap();
                    arrived.fetch_add(1, Ordering::SeqCst);
                    assert!(b.enter_for(timing().wait()).unwrap());
                    // Nobody is through before all have arrived.
                    assert_eq!(arrived.load(Ordering::SeqCst), N);
                    entered.fetch_add(1, Ordering::SeqCst);
                    let me = b.member_path().unwrap();
                    assert!(is_uuid(me.rsplit('/').next().unwrap()), "{me}");
                    assert!(b.leave_for(timing().wait()).unwrap());
                    // Nobody is out before all have entered.
                    assert_eq!(entered.load(Ordering::SeqCst), N);
                    left.fetch_add(1, Ordering::SeqCst);
                    assert!(b.member_path().is_none());
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    });
    assert_eq!(left.load(Ordering::SeqCst), N);
    // Nothing left but the (container) parent: members and `ready` are gone.
    assert_eq!(children(&admin, "/barriers/double"), Vec::<String>::new());
}

/// The layout while a round is in: one 36-character UUID member per
/// participant (EPHEMERAL, the client's default data) and `ready`
/// (PERSISTENT).
#[test]
fn double_barrier_layout_is_curators() {
    let s = server();
    let (a, b) = (connect(&s.connect_string()), connect(&s.connect_string()));
    let da = DistributedDoubleBarrier::new(&a, "/barriers/layout", 2).unwrap();
    let db = DistributedDoubleBarrier::new(&b, "/barriers/layout", 2).unwrap();
    std::thread::scope(|sc| {
        let t = sc.spawn(|| da.enter_for(timing().wait()).unwrap());
        assert!(db.enter_for(timing().wait()).unwrap());
        assert!(t.join().unwrap());
    });
    let kids = children(&a, "/barriers/layout");
    assert_eq!(kids.len(), 3, "{kids:?}");
    assert!(kids.contains(&"ready".to_string()));
    for k in kids.iter().filter(|k| *k != "ready") {
        assert!(is_uuid(k), "{k}");
        let (data, stat) = a.get_data(&format!("/barriers/layout/{k}")).unwrap();
        assert_eq!(data, a.default_data());
        assert!(stat.ephemeral_owner == a.session_id() || stat.ephemeral_owner == b.session_id());
    }
    let (_, ready) = a.get_data("/barriers/layout/ready").unwrap();
    assert_eq!(ready.ephemeral_owner, 0);
    std::thread::scope(|sc| {
        let t = sc.spawn(|| da.leave_for(timing().wait()).unwrap());
        assert!(db.leave_for(timing().wait()).unwrap());
        assert!(t.join().unwrap());
    });
    assert!(children(&a, "/barriers/layout").is_empty());
}

/// Curator's GH-1290: a member woken by a connection change (or any wakeup)
/// before enough members are in must not pass. Two of three members wait
/// through two broken connections (each wakes both, and both ask the server
/// again) with a stray, non-member node under the path the whole time: it is
/// not a member, so only the third member's arrival lets them in, and the
/// stray node holds no leave back.
#[test]
fn double_barrier_never_passes_with_too_few_members() {
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let (a, b) = (proxied_client(&proxy), proxied_client(&proxy));
    let third = connect(&s.connect_string());
    let path = "/barriers/gh1290";
    let stray = format!("{path}/not-ready");
    third
        .create()
        .creating_parent_containers_if_needed()
        .for_path(&stray)
        .unwrap();
    let da = DistributedDoubleBarrier::new(&a, path, 3).unwrap();
    let db = DistributedDoubleBarrier::new(&b, path, 3).unwrap();
    std::thread::scope(|sc| {
        let ta = sc.spawn(|| da.enter_for(timing().wait()));
        let tb = sc.spawn(|| db.enter_for(timing().wait()));
        // Both members and the stray node: three children, two members.
        assert!(wait_until(timing().wait(), || children(&third, path).len() == 3));
        for _ in 0..2 {
            let before = proxy.accepted();
            proxy.cut();
            // Both reconnect (and so both are woken).
            assert!(wait_until(timing().wait(), || proxy.accepted() >= before + 2
                && a.is_connected()
                && b.is_connected()));
        }
        // A wakeup by a node coming and going under the path.
        third.create().for_path(&format!("{path}/spurious")).unwrap();
        third.delete().for_path(&format!("{path}/spurious")).unwrap();
        // Still two members, nobody through, no `ready`.
        let passed: Vec<String> = [(&ta, "a"), (&tb, "b")]
            .iter()
            .filter(|(t, _)| t.is_finished())
            .map(|(_, n)| n.to_string())
            .collect();
        let kids = children(&third, path);
        assert!(
            passed.is_empty(),
            "{passed:?} passed with too few members; children {kids:?}"
        );
        assert_eq!(kids.len(), 3, "{kids:?}");
        assert!(!kids.contains(&"ready".to_string()));
        let dc = DistributedDoubleBarrier::new(&third, path, 3).unwrap();
        assert!(dc.enter_for(timing().wait()).unwrap());
        assert_eq!(ta.join().unwrap(), Ok(true));
        assert_eq!(tb.join().unwrap(), Ok(true));
        // The stray node is no member: it holds no leave back.
        let (la, lb) = (
            sc.spawn(|| da.leave_for(timing().wait())),
            sc.spawn(|| db.leave_for(timing().wait())),
        );
        assert_eq!(dc.leave_for(timing().wait()), Ok(true));
        assert_eq!(la.join().unwrap(), Ok(true));
        assert_eq!(lb.join().unwrap(), Ok(true));
    });
    assert_eq!(children(&third, path), vec!["not-ready".to_string()]);
}

/// An enter that times out (or ends at the close) leaves no member node; a
/// `ready` left by an earlier round lets a member straight through
/// (Curator's rule, documented), and `remove_stale_ready` clears it.
#[test]
fn double_barrier_timeout_leaves_no_orphan_and_stale_ready_is_curators() {
    let s = server();
    let c = connect(&s.connect_string());
    let path = "/barriers/orphans";
    let b = DistributedDoubleBarrier::new(&c, path, 2).unwrap();
    let deadline = Instant::now() + Duration::from_millis(200);
    assert!(!b.enter_until(deadline).unwrap());
    assert!(Instant::now() >= deadline);
    assert!(Instant::now() <= deadline + MARGIN);
    assert!(b.member_path().is_none());
    assert!(children(&c, path).is_empty(), "orphan: {:?}", children(&c, path));
    assert!(matches!(b.leave(), Err(Error::NotBarrierMember { .. })));

    // A stale `ready` (an earlier round's last member died in leave).
    c.create()
        .creating_parent_containers_if_needed()
        .for_path(&format!("{path}/ready"))
        .unwrap();
    assert!(
        b.enter_for(Duration::from_millis(200)).unwrap(),
        "Curator's rule: through"
    );
    assert!(b.leave_for(timing().wait()).unwrap());
    assert!(children(&c, path).is_empty(), "leave deletes ready");
    c.create().for_path(&format!("{path}/ready")).unwrap();
    assert!(b.remove_stale_ready().unwrap());
    assert!(!b.enter_for(Duration::from_millis(100)).unwrap());

    // An enter ended by the close: typed, at once, nothing left.
    let d = connect(&s.connect_string());
    let bd = DistributedDoubleBarrier::new(&d, path, 2).unwrap();
    std::thread::scope(|sc| {
        let t = sc.spawn(|| bd.enter());
        assert!(wait_until(timing().wait(), || children(&c, path).len() == 1));
        d.close();
        assert_eq!(t.join().unwrap(), Err(Error::ZooKeeper(zk_framework::Error::Closed)));
    });
    assert!(wait_until(timing().wait(), || children(&c, path).is_empty()));
    assert_eq!(bd.enter(), Err(Error::ZooKeeper(zk_framework::Error::Closed)));
    assert_eq!(bd.leave(), Err(Error::ZooKeeper(zk_framework::Error::Closed)));

    // Bad input.
    assert!(matches!(
        DistributedDoubleBarrier::new(&c, path, 0),
        Err(Error::InvalidArgument(_))
    ));
    assert!(DistributedDoubleBarrier::new(&c, "/", 2).is_err());
}

/// Composed: a member waiting in `enter` loses its session (an expiry): its
/// node went with the session; it makes it again on the new session, the
/// last member comes, both pass, both leave, nothing is left behind.
#[test]
fn double_barrier_member_whose_session_expires_while_entering_comes_back() {
    let s = server();
    let (a, b) = (client(&s), client(&s));
    let path = "/barriers/expiry";
    let wait = timing().wait() * 2;
    let (sid, pw) = {
        let zk = a.zookeeper_client();
        (zk.session_id(), zk.session_password())
    };
    let ba = DistributedDoubleBarrier::new(&a, path, 2).unwrap();
    let entering = std::thread::spawn(move || {
        let entered = ba.enter_for(wait);
        (ba, entered)
    });
    assert!(wait_until(wait, || children(&b, path).len() == 1));
    s.expire_session(sid, &pw).unwrap();
    // The node goes with the session, and comes back on the new one.
    assert!(wait_until(wait, || a.session_id() != sid && children(&b, path).len() == 1));
    let bb = DistributedDoubleBarrier::new(&b, path, 2).unwrap();
    assert!(bb.enter_for(wait).unwrap(), "the last member passes");
    let (ba, entered) = entering.join().unwrap();
    assert!(entered.unwrap(), "the member that lost its session passes too");
    let leaving = std::thread::spawn(move || ba.leave_for(wait));
    assert!(bb.leave_for(wait).unwrap());
    assert!(leaving.join().unwrap().unwrap());
    assert!(children(&b, path).is_empty(), "nothing left: {:?}", children(&b, path));
}

/// Two members of a barrier of 2 at `path`, one on each client, entered
/// together.
fn enter_together(
    a: &zk_framework::CuratorFramework,
    b: &zk_framework::CuratorFramework,
    path: &str,
    wait: Duration,
) -> (DistributedDoubleBarrier, DistributedDoubleBarrier) {
    let ba = DistributedDoubleBarrier::new(a, path, 2).unwrap();
    let bb = DistributedDoubleBarrier::new(b, path, 2).unwrap();
    let entering = std::thread::spawn(move || {
        let entered = ba.enter_for(wait);
        (ba, entered)
    });
    assert!(bb.enter_for(wait).unwrap());
    let (ba, entered) = entering.join().unwrap();
    assert!(entered.unwrap());
    (ba, bb)
}

/// `leave`'s promise: a member whose node went with an expired session has
/// left (nobody waits for it, and its `leave` says so); a member whose node
/// someone deleted while its session lived is told it is no member.
#[test]
fn double_barrier_leave_counts_a_node_gone_with_its_session_as_left() {
    let s = server();
    let (a, b) = (client(&s), client(&s));
    let path = "/barriers/leave-expired";
    let wait = timing().wait() * 2;
    let (sid, pw) = {
        let zk = a.zookeeper_client();
        (zk.session_id(), zk.session_password())
    };
    let (ba, bb) = enter_together(&a, &b, path, wait);
    s.expire_session(sid, &pw).unwrap();
    let members = |path: &str| children(&b, path).into_iter().filter(|k| is_uuid(k)).count();
    assert!(wait_until(wait, || a.session_id() != sid && members(path) == 1));
    let started = Instant::now();
    assert!(
        ba.leave_for(wait).unwrap(),
        "its node went with its session: it has left"
    );
    assert!(started.elapsed() <= wait + MARGIN, "{:?}", started.elapsed());
    assert!(bb.leave_for(wait).unwrap(), "the other member is not kept waiting");
    assert!(children(&b, path).is_empty(), "nothing left: {:?}", children(&b, path));

    // Deleted by someone else while the session lived: not a member.
    let path = "/barriers/leave-deleted";
    let (ca, cb) = enter_together(&a, &b, path, wait);
    let ours: Vec<String> = children(&b, path)
        .into_iter()
        .filter(|k| {
            is_uuid(k)
                && b.check_exists(&format!("{path}/{k}"))
                    .ok()
                    .flatten()
                    .is_some_and(|st| st.ephemeral_owner == a.session_id())
        })
        .collect();
    assert_eq!(ours.len(), 1, "{ours:?}");
    b.delete().for_path(&format!("{path}/{}", ours[0])).unwrap();
    assert!(matches!(ca.leave_for(wait), Err(Error::NotBarrierMember { .. })));
    assert!(cb.leave_for(wait).unwrap());
    assert!(children(&b, path).is_empty(), "nothing left: {:?}", children(&b, path));
}
