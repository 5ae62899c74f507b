//! What the fuzz suites share (zk-proto's `fuzz_decoders`, and zk-framework's,
//! which includes this file by `#[path]`): a seeded, deterministic PRNG
//! (SplitMix64; no extra crate), `ZK_FUZZ_SEED`, a panic hook that counts
//! panics on every thread, mutations of valid encodings, and valid samples of
//! the records.

// Each binary that includes this module uses a part of it.
#![allow(dead_code, unused_imports)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, Once};

use zk_proto::jute::Encode;
use zk_proto::*;

// ---------------------------------------------------------------------------
// PRNG, panic counting, mutations.

#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    pub fn bytes(&mut self, max: usize) -> Vec<u8> {
        let n = self.below(max + 1);
        (0..n).map(|_| self.next() as u8).collect()
    }
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

pub fn seed() -> u64 {
    std::env::var("ZK_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

pub static PANICS: AtomicUsize = AtomicUsize::new(0);
pub static PANIC_SITES: Mutex<Vec<String>> = Mutex::new(Vec::new());
pub static HOOK: Once = Once::new();

/// Counts every panic in the process (client and server threads included).
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

pub fn assert_no_panics(what: &str) {
    let n = PANICS.load(Ordering::SeqCst);
    assert_eq!(n, 0, "{what}: {n} panics: {:?}", PANIC_SITES.lock().map(|v| v.clone()));
}

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

pub fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
    let mut v = base.to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = v.len();
        match rng.below(11) {
            0 if len > 0 => {
                let i = rng.below(len);
                v[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                v[i] = rng.next() as u8;
            }
            2 => v.truncate(rng.below(len + 1)),
            3 => {
                let extra = rng.bytes(16);
                v.extend(extra);
            }
            4 => {
                let at = rng.below(len + 1);
                let extra = rng.bytes(8);
                v.splice(at..at, extra);
            }
            5 if len >= 4 => {
                let at = rng.below(len - 3);
                let x = *rng.pick(INTERESTING_I32);
                v[at..at + 4].copy_from_slice(&x.to_be_bytes());
            }
            6 if len >= 8 => {
                let at = rng.below(len - 7);
                let x = *rng.pick(&[-1i64, 0, 1, i64::MAX, i64::MIN]);
                v[at..at + 8].copy_from_slice(&x.to_be_bytes());
            }
            7 if len > 0 => {
                let a = rng.below(len);
                let b = a + rng.below(len - a + 1);
                let dup = v[a..b].to_vec();
                let at = rng.below(len + 1);
                v.splice(at..at, dup);
            }
            8 if len > 0 => {
                let a = rng.below(len);
                let b = a + rng.below(len - a + 1);
                v.drain(a..b);
            }
            9 if len > 1 => {
                let (a, b) = (rng.below(len), rng.below(len));
                v.swap(a, b);
            }
            _ => {
                // A length-like field set to "just past the end".
                if len >= 4 {
                    let at = rng.below(len - 3);
                    let x = (len - at) as i32;
                    v[at..at + 4].copy_from_slice(&x.to_be_bytes());
                }
            }
        }
    }
    v
}

pub fn hexdump(b: &[u8]) -> String {
    b.iter().take(256).map(|x| format!("{x:02x}")).collect()
}

// ---------------------------------------------------------------------------
// Valid samples of every record.

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

pub fn create_req(path: &str) -> CreateRequest {
    CreateRequest {
        path: path.into(),
        data: b"data".to_vec(),
        acl: acl(),
        flags: 3,
    }
}

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
