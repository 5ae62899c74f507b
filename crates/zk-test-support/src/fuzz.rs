//! What zk-framework's wire suites (`fuzz_wire`) use, on `proptest`: the
//! configuration (a fixed seed and case counts, so a failure reproduces), the
//! inputs of the coverage-guided fuzzer's corpus (`zk-fuzz`, `fuzz/corpus/`)
//! as values a plan picks, valid samples of the records, and a panic hook
//! that counts panics on every thread. The bytes themselves come from the
//! corpus: the fuzzer is the one generator of hostile bytes.
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
//! use zk_test_support::fuzz::{config, from_corpus};
//!
//! let mut runner = TestRunner::new(config(16));
//! runner
//!     .run(&from_corpus("path"), |bytes| {
//!         // Every input of the path target's corpus is a file of the repository.
//!         prop_assert!(bytes.len() < 1 << 20);
//!         Ok(())
//!     })
//!     .unwrap();
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, Once};

use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, RngAlgorithm, RngSeed};

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

/// One of [`INTERESTING_I32`].
pub fn interesting_i32() -> impl Strategy<Value = i32> {
    select(INTERESTING_I32)
}

/// One input of zk-fuzz target `target`'s corpus or regressions
/// (`fuzz/corpus/<target>/`, `fuzz/regressions/<target>/`): the bytes the
/// coverage-guided fuzzer kept because they reach code no other input
/// reached, and the seeds. The wire suites send them over TCP; nothing here
/// makes random bytes of its own.
///
/// # Panics
///
/// When the target has no input (a misspelt target): a test's mistake.
pub fn from_corpus(target: &str) -> impl Strategy<Value = Vec<u8>> {
    let inputs: Vec<Vec<u8>> = zk_fuzz::corpus::inputs(target).into_iter().map(|(_, b)| b).collect();
    assert!(!inputs.is_empty(), "zk-fuzz target {target} has no corpus");
    select(inputs)
}

/// An input of the `client_reply` target's corpus without its first byte
/// (which picks what the client awaits): a reply frame's payload (a header
/// and a body), or a handshake's answer, as a lying server sends it.
pub fn reply_payload() -> impl Strategy<Value = Vec<u8>> {
    from_corpus("client_reply").prop_map(|mut b| {
        if !b.is_empty() {
            b.remove(0);
        }
        b
    })
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
// Valid samples of the records (the fuzz corpus' seeds are built from them).

pub use zk_fuzz::seeds::{acl, create_req, multi_request, multi_response, stat};
