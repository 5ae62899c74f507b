//! The recipe API's marked write (`fw.recipe().marked_write`) and synced
//! reads: what each outcome promises, through real faults on either backend
//! (a `FaultProxy` drops a reply or loses a request on its way; the harness
//! expires a session), and bad input. The lost reply on an ensemble whose
//! follower lags is in `lagging`.

use std::thread;
use std::time::{Duration, Instant};

use crate::support::framework::*;
use crate::support::{connect, Client};
use zk_framework::proto::{perms, Acl, OpCode};
use zk_framework::recipe::{MarkedWrite, Marker, Settled, Unproven, WriteProof};
use zk_framework::{CuratorFramework, Error, Op, OpResult, ReadOp, ReadResult, RetryNTimes, RetryOneTime, Stat};
use zk_testing::proxy::FaultProxy;
use zk_testing::{wait_until, TestingServer};

/// A client through `proxy`, closed when dropped, with a retry policy long
/// enough to ride out the faults these tests make (5 s).
fn through(proxy: &FaultProxy) -> Client {
    let c = builder_for(&proxy.connect_string())
        .retry_policy(RetryNTimes::new(50, Duration::from_millis(100)))
        .build()
        .expect("build");
    c.block_until_connected(timing().wait()).expect("connects");
    Client(c)
}

fn node(c: &CuratorFramework, path: &str) -> (Vec<u8>, Stat) {
    c.get_data(path).expect("the node")
}

fn open() -> Vec<Acl> {
    Acl::open_unsafe()
}

/// A counter-like write: `setData(path, data, version)` with a fresh marker
/// under it, reading the node back with its proof.
fn set_with(path: &str, data: &[u8], version: i32, marker: Marker) -> MarkedWrite {
    MarkedWrite::new(vec![Op::set_data(path, data.to_vec(), Some(version))], marker).read_back(path)
}

fn fresh(path: &str, name: &str) -> Marker {
    Marker::fresh(format!("{path}/_c_{name}-once"), open())
}

fn applied(s: Settled) -> zk_framework::recipe::Applied {
    match s {
        Settled::Applied(a) => a,
        other => panic!("not applied: {other:?}"),
    }
}

/// Applied by its reply: the results, the transaction's zxid (the node's
/// mzxid), the marker kept at version 0 and owned by the session; the kept
/// marker written at its version by the next write.
#[test]
fn a_marked_write_is_applied_by_its_reply_and_its_marker_kept() {
    let s = server();
    let c = connect(&s.connect_string());
    let (_, st) = c
        .create()
        .creating_parents_if_needed()
        .for_path_with_stat("/mw/reply")
        .unwrap();
    let a = applied(
        c.recipe()
            .marked_write(set_with("/mw/reply", b"1", st.version, fresh("/mw/reply", "a")))
            .unwrap(),
    );
    assert_eq!(a.proof, WriteProof::Reply);
    let (data, now) = node(&c, "/mw/reply");
    assert_eq!(data, b"1");
    assert_eq!(a.zxid, now.mzxid, "the transaction's zxid");
    // The set's own stat (taken before the marker's create in the same
    // transaction added a child).
    assert!(matches!(a.results.as_deref(), Some([OpResult::SetData { stat }])
        if (stat.version, stat.mzxid) == (now.version, now.mzxid)));
    assert!(a.reads.is_empty(), "nothing read back when the reply told");
    let kept = a.marker.expect("a kept marker");
    assert_eq!(
        (kept.path(), kept.version(), kept.session()),
        ("/mw/reply/_c_a-once", 0, c.session_id())
    );
    let m = c.check_exists(kept.path()).unwrap().expect("the marker exists");
    assert_eq!(m.ephemeral_owner, c.session_id());
    // The next write writes the kept marker at its version.
    let b = applied(
        c.recipe()
            .marked_write(set_with("/mw/reply", b"2", now.version, Marker::Kept(kept)))
            .unwrap(),
    );
    let kept = b.marker.unwrap();
    assert_eq!(kept.version(), 1);
    assert_eq!(c.check_exists(kept.path()).unwrap().unwrap().version, 1);
    assert_eq!(node(&c, "/mw/reply").0, b"2");
}

/// A reply lost after the server applied the write: proven by the marker
/// (read after a sync), applied once, the node read back with the proof; for
/// a fresh marker and for a kept one.
#[test]
fn a_lost_reply_is_proven_by_the_marker_and_the_write_applied_once() {
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = through(&proxy);
    let admin = connect(&s.connect_string());
    let (_, st) = admin
        .create()
        .creating_parents_if_needed()
        .for_path_with_stat("/mw/lost")
        .unwrap();
    let syncs = s.embedded().map(|e| e.stats().requests(OpCode::Sync));
    proxy.drop_next_reply();
    let a = applied(
        c.recipe()
            .marked_write(set_with("/mw/lost", b"1", st.version, fresh("/mw/lost", "b")))
            .unwrap(),
    );
    assert_eq!(proxy.dropped(), 1, "the transaction's reply was lost");
    assert_eq!(a.proof, WriteProof::Marker);
    assert_eq!(a.results, None);
    let (data, now) = node(&admin, "/mw/lost");
    assert_eq!(
        (data.as_slice(), now.version),
        (&b"1"[..], st.version + 1),
        "applied once"
    );
    assert_eq!(a.zxid, now.mzxid);
    assert_eq!(a.reads, vec![ReadResult::Data(Some((b"1".to_vec(), now.clone())))]);
    if let (Some(before), Some(e)) = (syncs, s.embedded()) {
        assert!(
            e.stats().requests(OpCode::Sync) > before,
            "the proof was read after a sync"
        );
    }
    // A kept marker's version proves the next lost reply.
    let kept = a.marker.unwrap();
    assert_eq!(kept.version(), 0);
    proxy.drop_next_reply();
    let b = applied(
        c.recipe()
            .marked_write(set_with("/mw/lost", b"2", now.version, Marker::Kept(kept)))
            .unwrap(),
    );
    assert_eq!(proxy.dropped(), 2);
    assert_eq!(b.proof, WriteProof::Marker);
    assert_eq!(b.marker.unwrap().version(), 1);
    assert_eq!(node(&admin, "/mw/lost").1.version, st.version + 2, "applied once");
}

/// A request lost on its way (never applied, the connection broken with it
/// in flight): the marker proves it was not applied, and it is sent again,
/// once.
#[test]
fn a_request_lost_on_its_way_is_proven_not_applied_and_sent_again_once() {
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = through(&proxy);
    let (_, st) = c
        .create()
        .creating_parents_if_needed()
        .for_path_with_stat("/mw/lost-req")
        .unwrap();
    proxy.lose_next_request(OpCode::Multi);
    let a = applied(
        c.recipe()
            .marked_write(set_with("/mw/lost-req", b"1", st.version, fresh("/mw/lost-req", "c")))
            .unwrap(),
    );
    assert_eq!(proxy.lost_requests(), 1);
    assert_eq!(a.proof, WriteProof::Reply, "the second send's reply");
    assert_eq!(node(&c, "/mw/lost-req").1.version, st.version + 1, "applied once");
    assert!(c.check_exists("/mw/lost-req/_c_c-once").unwrap().is_some());
}

/// The write's own op refused: `Refused` at index 0 with the server's error,
/// nothing applied (no marker made), a kept marker given back unchanged.
#[test]
fn a_refused_write_applies_nothing_and_gives_its_marker_back() {
    let s = server();
    let c = connect(&s.connect_string());
    let (_, st) = c
        .create()
        .creating_parents_if_needed()
        .for_path_with_stat("/mw/refused")
        .unwrap();
    match c
        .recipe()
        .marked_write(set_with("/mw/refused", b"x", st.version + 7, fresh("/mw/refused", "d")))
        .unwrap()
    {
        Settled::Refused {
            index, error, results, ..
        } => {
            assert_eq!(index, 0);
            assert!(matches!(error, Error::BadVersion { .. }), "{error:?}");
            assert_eq!(results.len(), 2);
        }
        other => panic!("{other:?}"),
    }
    assert!(
        c.check_exists("/mw/refused/_c_d-once").unwrap().is_none(),
        "no marker made"
    );
    assert_eq!(node(&c, "/mw/refused").1.version, st.version);
    let kept = applied(
        c.recipe()
            .marked_write(set_with("/mw/refused", b"1", st.version, fresh("/mw/refused", "d")))
            .unwrap(),
    )
    .marker
    .unwrap();
    match c
        .recipe()
        .marked_write(set_with("/mw/refused", b"x", 99, Marker::Kept(kept.clone())))
        .unwrap()
    {
        Settled::Refused { index: 0, marker, .. } => assert_eq!(marker, Marker::Kept(kept.clone())),
        other => panic!("{other:?}"),
    }
    assert_eq!(c.check_exists(kept.path()).unwrap().unwrap().version, 0, "unchanged");
}

/// A kept marker someone deleted: the transaction fails on the marker's own
/// op (`NoNode`), nothing applied; the caller makes a fresh one.
#[test]
fn a_kept_marker_deleted_by_someone_else_is_refused_on_its_own_op() {
    let s = server();
    let c = connect(&s.connect_string());
    let admin = connect(&s.connect_string());
    let (_, st) = c
        .create()
        .creating_parents_if_needed()
        .for_path_with_stat("/mw/gone")
        .unwrap();
    let kept = applied(
        c.recipe()
            .marked_write(set_with("/mw/gone", b"1", st.version, fresh("/mw/gone", "e")))
            .unwrap(),
    )
    .marker
    .unwrap();
    admin.delete().for_path(kept.path()).unwrap();
    match c
        .recipe()
        .marked_write(set_with("/mw/gone", b"2", st.version + 1, Marker::Kept(kept)))
        .unwrap()
    {
        Settled::Refused { index, error, .. } => {
            assert_eq!(index, 1, "the marker's op");
            assert!(matches!(error, Error::NoNode { .. }), "{error:?}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(node(&c, "/mw/gone").0, b"1", "nothing applied");
}

/// A kept marker of an ended session went with it: refused on the marker's
/// op at once, nothing sent.
#[test]
fn a_kept_marker_of_an_ended_session_is_refused_without_a_send() {
    let s = server();
    let c = connect(&s.connect_string());
    let (_, st) = c
        .create()
        .creating_parents_if_needed()
        .for_path_with_stat("/mw/old")
        .unwrap();
    let kept = applied(
        c.recipe()
            .marked_write(set_with("/mw/old", b"1", st.version, fresh("/mw/old", "f")))
            .unwrap(),
    )
    .marker
    .unwrap();
    let zk = c.zookeeper_client();
    s.expire_session(zk.session_id(), &zk.session_password()).unwrap();
    assert!(wait_until(timing().wait(), || c.session_id() != kept.session() && c.is_connected()));
    match c
        .recipe()
        .marked_write(set_with("/mw/old", b"2", st.version + 1, Marker::Kept(kept)))
        .unwrap()
    {
        Settled::Refused { index: 1, error, .. } => assert!(matches!(error, Error::NoNode { .. })),
        other => panic!("{other:?}"),
    }
    assert_eq!(node(&c, "/mw/old").0, b"1");
}

/// Composed: the reply lost, the client kept off the server while its
/// session expires, then let back: the marker went with the session, so the
/// outcome is the read-back, read after a sync on the new session.
#[test]
fn a_lost_reply_whose_session_expires_before_the_proof_is_read_back() {
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = through(&proxy);
    let admin = connect(&s.connect_string());
    let (_, st) = admin
        .create()
        .creating_parents_if_needed()
        .for_path_with_stat("/mw/expired")
        .unwrap();
    let zk = c.zookeeper_client();
    let (sid, pw) = (zk.session_id(), zk.session_password());
    proxy.drop_next_reply();
    proxy.refuse(true);
    let writer = c.0.clone();
    let w = thread::spawn(move || {
        writer
            .recipe()
            .marked_write(set_with("/mw/expired", b"1", st.version, fresh("/mw/expired", "g")))
    });
    assert!(wait_until(timing().wait(), || proxy.dropped() == 1 && !c.is_connected()));
    s.expire_session(sid, &pw).unwrap();
    proxy.refuse(false);
    let r = w.join().unwrap().unwrap();
    let (data, now) = node(&admin, "/mw/expired");
    match r {
        Settled::ReadBack {
            why,
            reads,
            error,
            zxid_before,
        } => {
            assert_eq!(why, Unproven::SessionChanged);
            assert!(error.may_have_applied(), "{error:?}");
            assert_eq!(reads, vec![ReadResult::Data(Some((data, now.clone())))]);
            assert!(zxid_before < now.mzxid, "a zxid seen before the write's");
        }
        other => panic!("{other:?}"),
    }
    assert_ne!(c.session_id(), sid);
    assert!(
        admin.check_exists("/mw/expired/_c_g-once").unwrap().is_none(),
        "gone with its session"
    );
}

/// Composed: the reply lost, and the kept marker written by someone else
/// before the proof: it cannot tell, and it is deleted (it proves nothing
/// any more); the read-back is given.
#[test]
fn a_kept_marker_written_by_someone_else_before_the_proof_is_read_back_and_deleted() {
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = through(&proxy);
    let admin = connect(&s.connect_string());
    let (_, st) = admin
        .create()
        .creating_parents_if_needed()
        .for_path_with_stat("/mw/meddled")
        .unwrap();
    let kept = applied(
        c.recipe()
            .marked_write(set_with("/mw/meddled", b"1", st.version, fresh("/mw/meddled", "h")))
            .unwrap(),
    )
    .marker
    .unwrap();
    let marker = kept.path().to_string();
    proxy.drop_next_reply();
    proxy.refuse(true);
    let writer = c.0.clone();
    let w = thread::spawn(move || {
        writer
            .recipe()
            .marked_write(set_with("/mw/meddled", b"2", st.version + 1, Marker::Kept(kept)))
    });
    assert!(wait_until(timing().wait(), || proxy.dropped() == 1 && !c.is_connected()));
    admin.set_data(&marker, b"meddled".to_vec(), None).unwrap();
    proxy.refuse(false);
    match w.join().unwrap().unwrap() {
        Settled::ReadBack { why, reads, .. } => {
            assert_eq!(why, Unproven::MarkerChanged);
            assert_eq!(reads[0].data().map(|(d, _)| d.clone()), Some(b"2".to_vec()));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        wait_until(timing().wait(), || admin.check_exists(&marker).unwrap().is_none()),
        "the meddled marker is deleted"
    );
}

/// Without a marker (a node whose ACL refuses one), a lost reply is the
/// read-back at once.
#[test]
fn an_unmarked_write_whose_reply_is_lost_is_read_back() {
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = through(&proxy);
    let (_, st) = c
        .create()
        .creating_parents_if_needed()
        .for_path_with_stat("/mw/unmarked")
        .unwrap();
    proxy.drop_next_reply();
    match c
        .recipe()
        .marked_write(set_with("/mw/unmarked", b"1", st.version, Marker::Unmarked))
        .unwrap()
    {
        Settled::ReadBack { why, reads, .. } => {
            assert_eq!(why, Unproven::NoMarker);
            assert_eq!(
                reads[0].data().map(|(d, s)| (d.clone(), s.version)),
                Some((b"1".to_vec(), 1))
            );
        }
        other => panic!("{other:?}"),
    }
    // Applied by its reply, an unmarked write has no marker to keep.
    let a = applied(
        c.recipe()
            .marked_write(set_with("/mw/unmarked", b"2", st.version + 1, Marker::Unmarked))
            .unwrap(),
    );
    assert_eq!(a.marker, None);
    assert_eq!(c.get_children("/mw/unmarked").unwrap(), Vec::<String>::new());
}

/// A node whose ACL lets anyone write it but not create under it: the
/// marker's create is refused (`NoAuth`, on the marker's op), nothing applied.
#[test]
fn a_marker_the_acl_refuses_is_refused_on_its_own_op() {
    let s = server();
    let c = connect(&s.connect_string());
    let no_create = vec![Acl::world(perms::READ | perms::WRITE | perms::DELETE)];
    let (_, st) = c
        .create()
        .creating_parents_if_needed()
        .with_acl(no_create)
        .for_path_with_stat("/mw/acl")
        .unwrap();
    match c
        .recipe()
        .marked_write(set_with("/mw/acl", b"1", st.version, fresh("/mw/acl", "i")))
        .unwrap()
    {
        Settled::Refused { index, error, .. } => {
            assert_eq!(index, 1);
            assert!(matches!(error, Error::NoAuth { .. }), "{error:?}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(node(&c, "/mw/acl").1.version, st.version, "nothing applied");
}

/// No proof in time: the reply lost and the server out of reach until the
/// retries and the deadline run out: `Unknown`, never a guess (the write
/// was in fact applied), within the deadline.
#[test]
fn no_proof_in_time_is_unknown_within_the_deadline() {
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = builder_for(&proxy.connect_string())
        .retry_policy(RetryOneTime::new(Duration::from_millis(10)))
        .build()
        .unwrap();
    c.block_until_connected(timing().wait()).unwrap();
    let c = Client(c);
    let admin = connect(&s.connect_string());
    let (_, st) = admin
        .create()
        .creating_parents_if_needed()
        .for_path_with_stat("/mw/unknown")
        .unwrap();
    proxy.drop_next_reply();
    proxy.refuse(true);
    let bound = Duration::from_secs(2);
    let t0 = Instant::now();
    let r = c
        .with_deadline(Some(t0 + bound))
        .recipe()
        .marked_write(set_with("/mw/unknown", b"1", st.version, fresh("/mw/unknown", "j")))
        .unwrap();
    let took = t0.elapsed();
    assert!(matches!(r, Settled::Unknown { .. }), "{r:?}");
    assert!(
        took <= bound + zk_framework::deadline::GRACE + Duration::from_secs(1),
        "{took:?}"
    );
    assert_eq!(node(&admin, "/mw/unknown").1.version, st.version + 1, "it was applied");
    proxy.refuse(false);
}

/// The proof's own `sync` meets a ConnectionLoss (lost on its way) and the
/// retry policy allows no more: `Unknown`, never a guess (the write was in
/// fact applied).
#[test]
fn a_sync_that_meets_connection_loss_leaves_the_outcome_unknown() {
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = builder_for(&proxy.connect_string())
        .retry_policy(RetryNTimes::new(0, Duration::from_millis(10)))
        .build()
        .unwrap();
    c.block_until_connected(timing().wait()).unwrap();
    let c = Client(c);
    let admin = connect(&s.connect_string());
    let (_, st) = admin
        .create()
        .creating_parents_if_needed()
        .for_path_with_stat("/mw/sync-lost")
        .unwrap();
    proxy.drop_next_reply();
    proxy.lose_next_request(OpCode::Sync);
    let r = c
        .recipe()
        .marked_write(set_with("/mw/sync-lost", b"1", st.version, fresh("/mw/sync-lost", "l")))
        .unwrap();
    assert_eq!(
        (proxy.dropped(), proxy.lost_requests()),
        (1, 1),
        "the reply and then the sync were lost"
    );
    assert!(matches!(r, Settled::Unknown { .. }), "{r:?}");
    assert_eq!(
        node(&admin, "/mw/sync-lost").1.version,
        st.version + 1,
        "it was applied"
    );
}

/// Bad input: an invalid path in an op, the marker or a read-back is an
/// `InvalidPath` before anything is sent; `sync_then_read` of nothing is an
/// `InvalidArgument`.
#[test]
fn bad_paths_are_refused_before_anything_is_sent() {
    let s = server();
    let c = connect(&s.connect_string());
    let good = || fresh("/mw/bad", "k");
    for w in [
        MarkedWrite::new(vec![Op::set_data("no-slash", b"x".to_vec(), None)], good()),
        MarkedWrite::new(
            vec![Op::set_data("/mw/bad", b"x".to_vec(), None)],
            Marker::fresh("bad/", open()),
        ),
        MarkedWrite::new(vec![Op::set_data("/mw/bad", b"x".to_vec(), None)], good()).read_back("//"),
    ] {
        assert!(matches!(c.recipe().marked_write(w), Err(Error::InvalidPath(_))));
    }
    assert!(matches!(c.recipe().sync_then_read(&[]), Err(Error::InvalidArgument(_))));
    assert!(matches!(
        c.recipe().sync_then_read(&[ReadOp::exists("x")]),
        Err(Error::InvalidPath(_))
    ));
    assert!(c.check_exists("/mw/bad").unwrap().is_none(), "nothing was sent");
}

/// `sync_then_read`: a sync and then each read on one connection; a missing
/// node reads `None`, the namespace is applied, the reads come in order.
#[test]
fn synced_reads_answer_in_order_after_one_sync() {
    let s = server();
    let c = crate::support::client_ns(&s, "mwns");
    c.create()
        .creating_parents_if_needed()
        .with_data(b"v".to_vec())
        .for_path("/r/a")
        .unwrap();
    let syncs = s.embedded().map(|e| e.stats().requests(OpCode::Sync));
    let got = c
        .recipe()
        .sync_then_read(&[
            ReadOp::get_data("/r/a"),
            ReadOp::exists("/r/missing"),
            ReadOp::get_children("/r"),
        ])
        .unwrap();
    assert_eq!(got[0].data().map(|(d, _)| d.clone()), Some(b"v".to_vec()));
    assert_eq!(got[1], ReadResult::Exists(None));
    assert_eq!(got[2].children().map(|(k, _)| k.clone()), Some(vec!["a".to_string()]));
    if let (Some(before), Some(e)) = (syncs, s.embedded()) {
        assert_eq!(e.stats().requests(OpCode::Sync), before + 1, "one sync");
    }
    c.close();
    let _: &TestingServer = &s;
}
