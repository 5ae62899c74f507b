//! SimpleDistributedQueue: Curator's layout (what Curator's consumer reads),
//! FIFO order, concurrent consumers each item exactly once, a lost offer
//! reply (the fault proxy, any backend) and a lost take-delete reply (the
//! embedded server's opcode-aimed drop) neither losing nor duplicating an
//! item, the item size limit, and operations at and after the client's close.
//! Embedded by default; `ZK_TEST_SERVER=apache` runs them on Apache
//! ZooKeeper (but the lost take reply, which needs the embedded server).

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::support::{connect, embedded_server, proxied_client, server, timing};
use parking_lot::Mutex;
use zk_framework::proto::OpCode;
use zk_framework::CuratorFramework;
use zk_recipes::{Error, SimpleDistributedQueue};
use zk_testing::proxy::FaultProxy;
use zk_testing::wait_until;

const MARGIN: Duration = Duration::from_millis(500);

fn children(c: &CuratorFramework, path: &str) -> Vec<String> {
    let mut k = c.get_children(path).unwrap_or_default();
    k.sort();
    k
}

/// What Curator's consumer sees: the `qn-` names, sorted as strings.
fn curator_items(c: &CuratorFramework, path: &str) -> Vec<(String, Vec<u8>)> {
    children(c, path)
        .into_iter()
        .filter(|n| n.starts_with("qn-"))
        // An item taken between the listing and its read is no item any more
        // (a test polls this while a take deletes one).
        .filter_map(|n| match c.get_data(&format!("{path}/{n}")) {
            Ok((data, _)) => Some((n, data)),
            Err(zk_framework::Error::NoNode { .. }) => None,
            Err(e) => panic!("reading {path}/{n}: {e}"),
        })
        .collect()
}

/// Waits until every marker is gone (read through `c`, so that the replies
/// of `c`'s own marker deletes have arrived before this returns).
fn no_markers(c: &CuratorFramework, path: &str) {
    assert!(
        wait_until(timing().wait(), || !children(c, path)
            .iter()
            .any(|n| n.starts_with("_op-"))),
        "markers left: {:?}",
        children(c, path)
    );
}

#[test]
fn layout_is_curators_and_order_is_fifo() {
    let s = server();
    let c = connect(&s.connect_string());
    let q = SimpleDistributedQueue::new(&c, "/queues/fifo").unwrap();
    assert_eq!(q.poll().unwrap(), None);
    assert_eq!(q.peek().unwrap(), None);
    assert!(matches!(q.element(), Err(Error::QueueEmpty { .. })));
    for i in 0..5u8 {
        q.offer(&[b'a' + i, 0, 255]).unwrap();
    }
    no_markers(&c, "/queues/fifo");
    // Curator's names and raw bytes: a Java consumer takes them in this order.
    let items = curator_items(&c, "/queues/fifo");
    let names: Vec<String> = items.iter().map(|(n, _)| n.clone()).collect();
    // PERSISTENT_SEQUENTIAL `qn-<10 digits>`, in offer order (the numbers
    // have gaps: the parent's counter also counts the markers, as it counts
    // Curator's own deletes).
    assert_eq!(names.len(), 5);
    assert_eq!(names[0], "qn-0000000000");
    for n in &names {
        assert!(n.len() == 13 && n[3..].bytes().all(|b| b.is_ascii_digit()), "{n}");
    }
    let data: Vec<u8> = items.iter().map(|(_, d)| d[0]).collect();
    assert_eq!(data, b"abcde");
    assert_eq!(items[0].1, vec![b'a', 0, 255]);
    let st = c.check_exists("/queues/fifo/qn-0000000000").unwrap().unwrap();
    assert_eq!(st.ephemeral_owner, 0);
    assert_eq!(q.peek().unwrap().unwrap(), vec![b'a', 0, 255]);
    assert_eq!(q.element().unwrap(), vec![b'a', 0, 255]);
    // A foreign node (a marker, kazoo's entry) is skipped.
    c.create().for_path("/queues/fifo/foreign").unwrap();
    assert_eq!(q.take().unwrap(), vec![b'a', 0, 255]);
    assert_eq!(q.poll().unwrap().unwrap()[0], b'b');
    assert_eq!(q.poll_for(Duration::ZERO).unwrap().unwrap()[0], b'c');
    // An item offered by another client (as Curator's would be) comes after.
    let other = connect(&s.connect_string());
    other
        .create()
        .with_mode(zk_framework::CreateMode::PersistentSequential)
        .with_data(b"java".to_vec())
        .for_path("/queues/fifo/qn-")
        .unwrap();
    assert_eq!(q.take().unwrap()[0], b'd');
    assert_eq!(q.take().unwrap()[0], b'e');
    assert_eq!(q.take().unwrap(), b"java");
    let deadline = Instant::now() + Duration::from_millis(150);
    assert_eq!(q.poll_until(deadline).unwrap(), None);
    assert!(Instant::now() >= deadline && Instant::now() <= deadline + MARGIN);
    no_markers(&c, "/queues/fifo");
    assert_eq!(children(&c, "/queues/fifo"), vec!["foreign".to_string()]);
}

#[test]
fn concurrent_consumers_take_each_item_exactly_once() {
    const ITEMS: usize = 60;
    let s = server();
    let producers: Vec<_> = (0..2).map(|_| connect(&s.connect_string())).collect();
    let consumers: Vec<_> = (0..3).map(|_| connect(&s.connect_string())).collect();
    let taken = Mutex::new(Vec::new());
    let done = AtomicUsize::new(0);
    std::thread::scope(|sc| {
        for (p, c) in producers.iter().enumerate() {
            sc.spawn(move || {
                let q = SimpleDistributedQueue::new(c, "/queues/many").unwrap();
                for i in (p..ITEMS).step_by(2) {
                    q.offer(format!("item-{i}").as_bytes()).unwrap();
                }
            });
        }
        for c in &consumers {
            let (taken, done) = (&taken, &done);
            sc.spawn(move || {
                let q = SimpleDistributedQueue::new(c, "/queues/many").unwrap();
                let mut mine = Vec::new();
                while done.load(Ordering::SeqCst) < ITEMS {
                    if let Some(item) = q.poll_for(Duration::from_millis(100)).unwrap() {
                        done.fetch_add(1, Ordering::SeqCst);
                        mine.push(String::from_utf8(item).unwrap());
                    }
                }
                taken.lock().extend(mine);
            });
        }
    });
    let taken = taken.into_inner();
    let unique: HashSet<&String> = taken.iter().collect();
    assert_eq!(taken.len(), ITEMS, "no item twice");
    assert_eq!(unique.len(), ITEMS, "every item once");
    assert!(curator_items(&producers[0], "/queues/many").is_empty());
}

/// Curator queues an item twice when an offer's reply is lost; here the
/// marker proves the offer applied and it is not sent again.
#[test]
fn a_lost_offer_reply_leaves_exactly_one_item() {
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = proxied_client(&proxy);
    let q = SimpleDistributedQueue::new(&c, "/queues/lost-offer").unwrap();
    q.offer(b"before").unwrap();
    no_markers(&c, "/queues/lost-offer");
    let sid = c.session_id();
    proxy.drop_next_reply();
    q.offer(b"lost reply").unwrap();
    assert_eq!(proxy.dropped(), 1, "the offer's reply was the one dropped");
    assert_eq!(c.session_id(), sid, "same session");
    no_markers(&c, "/queues/lost-offer");
    let items: Vec<Vec<u8>> = curator_items(&c, "/queues/lost-offer")
        .into_iter()
        .map(|(_, d)| d)
        .collect();
    assert_eq!(
        items,
        vec![b"before".to_vec(), b"lost reply".to_vec()],
        "exactly one copy"
    );
    assert_eq!(q.take().unwrap(), b"before");
    assert_eq!(q.take().unwrap(), b"lost reply");
    assert_eq!(q.poll().unwrap(), None);
}

/// Curator loses an item when a take's delete reply is lost (its retry gets
/// NoNode and it moves on to the next item); here the marker proves the
/// delete ours and the item is returned. The drop is aimed at the
/// transaction's reply, which only the embedded server can do.
#[test]
fn a_lost_take_reply_still_returns_the_item() {
    let s = embedded_server();
    let c = connect(&s.connect_string());
    let q = SimpleDistributedQueue::new(&c, "/queues/lost-take").unwrap();
    for item in [b"one", b"two"] {
        q.offer(item).unwrap();
    }
    let sid = c.session_id();
    s.embedded().unwrap().drop_next_reply(OpCode::Multi);
    assert_eq!(q.take().unwrap(), b"one", "the item whose delete reply was lost");
    assert_eq!(c.session_id(), sid, "same session");
    no_markers(&c, "/queues/lost-take");
    let left: Vec<Vec<u8>> = curator_items(&c, "/queues/lost-take")
        .into_iter()
        .map(|(_, d)| d)
        .collect();
    assert_eq!(left, vec![b"two".to_vec()], "nothing lost, nothing taken twice");
    assert_eq!(q.take().unwrap(), b"two");

    // The same for an offer, aimed at its transaction.
    s.embedded().unwrap().drop_next_reply(OpCode::Multi);
    q.offer(b"three").unwrap();
    no_markers(&c, "/queues/lost-take");
    assert_eq!(curator_items(&c, "/queues/lost-take").len(), 1);
}

#[test]
fn item_size_limit_and_operations_at_and_after_close() {
    let s = server();
    let c = connect(&s.connect_string());
    let q = SimpleDistributedQueue::new(&c, "/queues/limits").unwrap();
    let max = q.max_item_len();
    // The largest item goes through the server and back.
    let big = vec![7u8; max];
    q.offer(&big).unwrap();
    assert_eq!(q.take().unwrap(), big);
    // One byte more (and the server's whole 1 MiB): typed, nothing sent.
    for len in [max + 1, 1 << 20] {
        match q.offer(&vec![0u8; len]) {
            Err(Error::ItemTooLarge { len: l, max: m, .. }) => assert_eq!((l, m), (len, max)),
            r => panic!("{len} bytes: {r:?}"),
        }
    }
    assert!(curator_items(&c, "/queues/limits").is_empty());
    assert!(SimpleDistributedQueue::new(&c, "/").is_err());
    assert!(SimpleDistributedQueue::new(&c, "no-slash").is_err());

    // A take waiting on an empty queue ends at the close, typed, at once.
    let d = connect(&s.connect_string());
    let qd = SimpleDistributedQueue::new(&d, "/queues/limits").unwrap();
    std::thread::scope(|sc| {
        let t = sc.spawn(|| qd.take());
        assert!(wait_until(timing().wait(), || !t.is_finished()));
        let closed = Instant::now();
        d.close();
        assert_eq!(t.join().unwrap(), Err(Error::ZooKeeper(zk_framework::Error::Closed)));
        assert!(closed.elapsed() <= MARGIN);
    });
    let closed = Error::ZooKeeper(zk_framework::Error::Closed);
    assert_eq!(qd.offer(b"x"), Err(closed.clone()));
    assert_eq!(qd.take(), Err(closed.clone()));
    assert_eq!(qd.poll(), Err(closed.clone()));
    assert_eq!(qd.poll_for(timing().wait()), Err(closed.clone()));
    assert_eq!(qd.peek(), Err(closed.clone()));
    assert_eq!(qd.element(), Err(closed));
}

/// Offer then take N items, one client, on the embedded server: every item
/// comes back once, in the order offered, and the queue ends empty. It also
/// prints the figures in the module documentation (`-- --nocapture`); the
/// times are printed, never asserted.
#[test]
fn offer_then_take_thousands_returns_each_item_once_in_order() {
    let s = embedded_server();
    let c = connect(&s.connect_string());
    for n in [1_000usize, 10_000] {
        let q = SimpleDistributedQueue::new(&c, &format!("/queues/measure-{n}")).unwrap();
        let t = Instant::now();
        for i in 0..n {
            q.offer(format!("item {i}").as_bytes()).unwrap();
        }
        let offered = t.elapsed();
        let t = Instant::now();
        for i in 0..n {
            assert_eq!(q.take().unwrap(), format!("item {i}").into_bytes(), "take {i} of {n}");
        }
        let took = t.elapsed();
        assert_eq!(q.poll().unwrap(), None, "the queue of {n} ends empty");
        println!("N = {n}: offer {offered:?}, take {took:?}");
    }
}

/// Composed: an offer's reply lost, then (while the client is cut off) its
/// session expires before the proof: `OfferUnknown`, and the item, applied,
/// is there once.
#[test]
fn a_lost_offer_whose_session_expires_before_the_proof_is_unknown() {
    let s = server();
    let proxy = FaultProxy::start(&s.connect_string()).unwrap();
    let c = proxied_client(&proxy);
    let q = SimpleDistributedQueue::new(&c, "/queues/lost-expired").unwrap();
    q.offer(b"before").unwrap();
    // The first offer's marker delete answered (read through `c`), so that
    // the reply dropped below is the second offer's, not that delete's.
    no_markers(&c, "/queues/lost-expired");
    let zk = c.zookeeper_client();
    let (sid, pw) = (zk.session_id(), zk.session_password());
    proxy.drop_next_reply();
    let offer = std::thread::spawn(move || q.offer(b"lost reply"));
    assert!(wait_until(timing().wait(), || proxy.dropped() == 1));
    proxy.refuse(true);
    proxy.cut();
    s.expire_session(sid, &pw).unwrap();
    proxy.refuse(false);
    let r = offer.join().unwrap();
    assert!(matches!(r, Err(Error::OfferUnknown { .. })), "{r:?}");
    let admin = connect(&s.connect_string());
    let items: Vec<Vec<u8>> = curator_items(&admin, "/queues/lost-expired")
        .into_iter()
        .map(|(_, d)| d)
        .collect();
    assert_eq!(items, vec![b"before".to_vec(), b"lost reply".to_vec()], "applied once");
    no_markers(&admin, "/queues/lost-expired");
}

/// Composed: a take's delete reply lost (aimed at its transaction: the
/// embedded server only), then its session expired before the proof:
/// `TakeUnknown` with the item, which was taken (it is gone from the queue,
/// nothing else is).
#[test]
fn a_lost_take_whose_session_expires_before_the_proof_is_unknown_with_the_item() {
    let s = embedded_server();
    let c = connect(&s.connect_string());
    let admin = connect(&s.connect_string());
    let path = "/queues/lost-take-expired";
    let q = SimpleDistributedQueue::new(&c, path).unwrap();
    for item in [b"one", b"two"] {
        q.offer(item).unwrap();
    }
    let zk = c.zookeeper_client();
    let (sid, pw) = (zk.session_id(), zk.session_password());
    s.embedded().unwrap().drop_next_reply(OpCode::Multi);
    let take = std::thread::spawn(move || q.take());
    // The take's transaction was applied (its item is gone); its reply was not sent.
    assert!(wait_until(timing().wait(), || curator_items(&admin, path).len() == 1));
    s.expire_session(sid, &pw).unwrap();
    match take.join().unwrap() {
        Err(Error::TakeUnknown { item, .. }) => assert_eq!(item, b"one"),
        other => panic!("{other:?}"),
    }
    let left: Vec<Vec<u8>> = curator_items(&admin, path).into_iter().map(|(_, d)| d).collect();
    assert_eq!(left, vec![b"two".to_vec()], "only the item taken is gone");
    no_markers(&admin, path);
}
