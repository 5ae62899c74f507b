//! What the fuzz suites share (zk-proto's `fuzz_decoders`, zk-framework's
//! `fuzz_wire`), on `proptest`: the configuration (a fixed seed and case
//! counts, so a failure reproduces), mutations of valid encodings as values a
//! failing case shrinks, valid samples of the records, and a panic hook that
//! counts panics on every thread.
//!
//! A failing case is printed minimal (proptest shrinks it) with the seed it
//! came from; the same seed and case count find it again.
//! `PROPTEST_RNG_SEED=N` explores other cases, `PROPTEST_CASES=N` changes how
//! many (see `docs/testing.md`).
//!
//! # Examples
//!
//! ```
//! use proptest::prelude::*;
//! use proptest::test_runner::TestRunner;
//! use zk_test_support::fuzz::{config, mutate, mutation};
//!
//! let mut runner = TestRunner::new(config(64));
//! runner
//!     .run(&mutation(), |edits| {
//!         // Four edits at most, each adding 16 bytes at most.
//!         prop_assert!(mutate(b"abcdef", &edits).len() <= 6 + 4 * 16);
//!         Ok(())
//!     })
//!     .unwrap();
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, Once};

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{select, Index};
use proptest::test_runner::{Config, RngAlgorithm, RngSeed};
use zk_proto::*;

// ---------------------------------------------------------------------------
// Configuration.

/// The seed every suite starts from: `PROPTEST_RNG_SEED` when set, else 1.
pub fn seed() -> u64 {
    match Config::default().rng_seed {
        RngSeed::Fixed(s) => s,
        RngSeed::Random => 1,
    }
}

/// A proptest configuration for a suite of `cases` cases (`PROPTEST_CASES`
/// overrides it) from the fixed [`seed`] with the XorShift generator, so that
/// a failure reproduces, and no regression files (the seed replays the run).
pub fn config(cases: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    // XorShift, unless PROPTEST_RNG_ALGORITHM names one: ChaCha (proptest's
    // default) makes a debug build's case five times slower.
    let rng_algorithm = match std::env::var_os("PROPTEST_RNG_ALGORITHM") {
        Some(_) => Config::default().rng_algorithm,
        None => RngAlgorithm::XorShift,
    };
    Config {
        cases,
        rng_algorithm,
        rng_seed: RngSeed::Fixed(seed()),
        failure_persistence: None,
        ..Config::default()
    }
}

// ---------------------------------------------------------------------------
// Bytes and mutations.

/// Values at which a length or a code is most likely to be mishandled.
pub const INTERESTING_I32: &[i32] = &[
    -1,
    -2,
    0,
    1,
    2,
    4,
    16,
    255,
    i32::MAX,
    i32::MIN,
    0xfffff,
    0x100000,
    0x7fff_fff0,
    -101,
    -4,
    -8,
];

/// Up to `max` random bytes.
pub fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 0..=max)
}

/// One of [`INTERESTING_I32`] (three times in four), or any `i32`.
pub fn interesting_i32() -> impl Strategy<Value = i32> {
    prop_oneof![3 => select(INTERESTING_I32), 1 => any::<i32>()]
}

/// One change to an encoding. Positions are [`Index`]es, taken within the
/// length of the bytes at the moment the edit applies; an edit that needs more
/// bytes than there are changes nothing.
#[derive(Debug, Clone)]
pub enum Edit {
    /// Flips one bit of a byte.
    FlipBit(Index, u8),
    /// Sets a byte.
    SetByte(Index, u8),
    /// Cuts the bytes at a position (possibly the end).
    Truncate(Index),
    /// Appends bytes.
    Append(Vec<u8>),
    /// Inserts bytes at a position (possibly the end).
    Insert(Index, Vec<u8>),
    /// Overwrites four bytes with an `i32` (a length, a code).
    SetI32(Index, i32),
    /// Overwrites eight bytes with an `i64` (a zxid, a session id).
    SetI64(Index, i64),
    /// Copies a slice (start, length) to a position.
    Duplicate(Index, Index, Index),
    /// Removes a slice (start, length).
    Delete(Index, Index),
    /// Swaps two bytes.
    Swap(Index, Index),
    /// Sets four bytes to the number of bytes from them to the end: a length
    /// "just past the end".
    LengthToEnd(Index),
}

/// One [`Edit`], each kind as likely.
pub fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<Index>(), 0u8..8).prop_map(|(i, b)| Edit::FlipBit(i, b)),
        (any::<Index>(), any::<u8>()).prop_map(|(i, v)| Edit::SetByte(i, v)),
        any::<Index>().prop_map(Edit::Truncate),
        bytes(16).prop_map(Edit::Append),
        (any::<Index>(), bytes(8)).prop_map(|(i, b)| Edit::Insert(i, b)),
        (any::<Index>(), interesting_i32()).prop_map(|(i, v)| Edit::SetI32(i, v)),
        (any::<Index>(), select(&[-1i64, 0, 1, i64::MAX, i64::MIN][..])).prop_map(|(i, v)| Edit::SetI64(i, v)),
        (any::<Index>(), any::<Index>(), any::<Index>()).prop_map(|(a, n, to)| Edit::Duplicate(a, n, to)),
        (any::<Index>(), any::<Index>()).prop_map(|(a, n)| Edit::Delete(a, n)),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Edit::Swap(a, b)),
        any::<Index>().prop_map(Edit::LengthToEnd),
    ]
}

/// A mutation: one to four [`Edit`]s, applied in order by [`mutate`].
pub fn mutation() -> impl Strategy<Value = Vec<Edit>> {
    vec(edit(), 1..=4)
}

/// `base` with `edits` applied in order.
pub fn mutate(base: &[u8], edits: &[Edit]) -> Vec<u8> {
    let mut v = base.to_vec();
    for e in edits {
        let len = v.len();
        match e {
            Edit::FlipBit(i, bit) if len > 0 => v[i.index(len)] ^= 1 << (bit % 8),
            Edit::SetByte(i, b) if len > 0 => v[i.index(len)] = *b,
            Edit::Truncate(i) => v.truncate(i.index(len + 1)),
            Edit::Append(b) => v.extend_from_slice(b),
            Edit::Insert(i, b) => {
                let at = i.index(len + 1);
                v.splice(at..at, b.iter().copied());
            }
            Edit::SetI32(i, x) if len >= 4 => {
                let at = i.index(len - 3);
                v[at..at + 4].copy_from_slice(&x.to_be_bytes());
            }
            Edit::SetI64(i, x) if len >= 8 => {
                let at = i.index(len - 7);
                v[at..at + 8].copy_from_slice(&x.to_be_bytes());
            }
            Edit::Duplicate(a, n, to) if len > 0 => {
                let a = a.index(len);
                let b = a + n.index(len - a + 1);
                let dup = v[a..b].to_vec();
                let at = to.index(len + 1);
                v.splice(at..at, dup);
            }
            Edit::Delete(a, n) if len > 0 => {
                let a = a.index(len);
                let b = a + n.index(len - a + 1);
                v.drain(a..b);
            }
            Edit::Swap(a, b) if len > 1 => v.swap(a.index(len), b.index(len)),
            Edit::LengthToEnd(i) if len >= 4 => {
                let at = i.index(len - 3);
                let x = (len - at) as i32;
                v[at..at + 4].copy_from_slice(&x.to_be_bytes());
            }
            _ => {}
        }
    }
    v
}

/// The first 256 bytes of `b` in hex, for failure messages.
pub fn hexdump(b: &[u8]) -> String {
    b.iter().take(256).map(|x| format!("{x:02x}")).collect()
}

// ---------------------------------------------------------------------------
// Panics on every thread.

static PANICS: AtomicUsize = AtomicUsize::new(0);
static PANIC_SITES: Mutex<Vec<String>> = Mutex::new(Vec::new());
static HOOK: Once = Once::new();

/// Counts every panic in the process from now on (client and server threads
/// included), on top of the hook already set. Process-wide: a test that calls
/// it runs alone in a process of its own (`in_own_process`), as other suites
/// panic on purpose.
pub fn count_panics() {
    HOOK.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            let name = std::thread::current().name().unwrap_or("?").to_string();
            if let Ok(mut v) = PANIC_SITES.lock() {
                v.push(format!("{name}: {info}"));
            }
            prev(info);
        }));
    });
}

/// How many panics [`count_panics`] counted so far.
pub fn panics() -> usize {
    PANICS.load(Ordering::SeqCst)
}

/// Where the counted panics happened (thread name and message).
pub fn panic_sites() -> Vec<String> {
    PANIC_SITES.lock().map(|v| v.clone()).unwrap_or_default()
}

/// Fails with the panics' sites when [`count_panics`] counted any.
pub fn assert_no_panics(what: &str) {
    let n = panics();
    assert_eq!(n, 0, "{what}: {n} panics: {:?}", panic_sites());
}

// ---------------------------------------------------------------------------
// Valid samples of the records.

/// A `Stat` whose zxids start at `n`.
pub fn stat(n: i64) -> Stat {
    Stat {
        czxid: n,
        mzxid: n + 1,
        ctime: 1_700_000_000_000,
        mtime: 1_700_000_000_001,
        version: 3,
        cversion: -1,
        aversion: 0,
        ephemeral_owner: 0x0100_0000_0000_0001,
        data_length: 5,
        num_children: 2,
        pzxid: n + 2,
    }
}

/// An ACL of two entries (world, and a digest user reading).
pub fn acl() -> Vec<Acl> {
    vec![
        Acl::world(perms::ALL),
        Acl {
            perms: perms::READ,
            id: Id {
                scheme: "digest".into(),
                id: "u:Zm9v".into(),
            },
        },
    ]
}

/// A create request for `path` with data, [`acl`] and flags 3.
pub fn create_req(path: &str) -> CreateRequest {
    CreateRequest {
        path: path.into(),
        data: b"data".to_vec(),
        acl: acl(),
        flags: 3,
    }
}

/// A multi request with one op of every kind a multi carries.
pub fn multi_request() -> MultiRequest {
    MultiRequest {
        ops: vec![
            MultiOp::Create {
                op: OpCode::Create,
                request: create_req("/a"),
            },
            MultiOp::Create {
                op: OpCode::CreateContainer,
                request: create_req("/c"),
            },
            MultiOp::CreateTtl(CreateTtlRequest {
                path: "/t".into(),
                data: vec![],
                acl: acl(),
                flags: 5,
                ttl: 100,
            }),
            MultiOp::Delete(DeleteRequest {
                path: "/a".into(),
                version: -1,
            }),
            MultiOp::SetData(SetDataRequest {
                path: "/a".into(),
                data: vec![1],
                version: 2,
            }),
            MultiOp::Check(DeleteRequest {
                path: "/a".into(),
                version: 0,
            }),
            MultiOp::GetData(PathWatchRequest {
                path: "/a".into(),
                watch: false,
            }),
            MultiOp::GetChildren(PathWatchRequest {
                path: "/".into(),
                watch: true,
            }),
        ],
    }
}

/// A multi response with one result of every kind.
pub fn multi_response() -> MultiResponse {
    MultiResponse {
        results: vec![
            MultiResult::Create { path: "/a".into() },
            MultiResult::Create2 {
                path: "/b".into(),
                stat: stat(4),
            },
            MultiResult::Delete,
            MultiResult::SetData { stat: stat(5) },
            MultiResult::Check,
            MultiResult::GetData {
                data: vec![9, 9],
                stat: stat(6),
            },
            MultiResult::GetChildren {
                children: vec!["x".into(), "y".into()],
            },
            MultiResult::Error { err: -101 },
        ],
    }
}
