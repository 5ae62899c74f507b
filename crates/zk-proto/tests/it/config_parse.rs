//! The ensemble configuration parser (`zk_proto::config::EnsembleConfig::parse`,
//! what `/zookeeper/config` holds) on random text, mutated configurations and
//! random bytes, as proptest properties: it never panics, allocates only in
//! proportion to its input, and what parses is written back
//! (`to_string`) as text that parses to the same configuration. Strategies
//! and configuration are `zk_test_support::fuzz`'s (fixed seed,
//! `PROPTEST_RNG_SEED` and `PROPTEST_CASES` as for `fuzz_decoders`).

use proptest::prelude::*;
use proptest::sample::{select, Index};
use zk_proto::config::{ConfigError, EnsembleConfig};
use zk_test_support::fuzz::{bytes, config, hexdump, mutate, mutation, Edit};

use crate::alloc::largest_during;

const CASES: u32 = 10_000;

/// Configurations as servers write them, and forms they accept.
const SAMPLES: &[&str] = &[
    "server.1=127.0.0.1:25188:25191:participant;127.0.0.1:25185\n\
     server.2=127.0.0.1:25189:25192:participant;127.0.0.1:25186\n\
     server.3=127.0.0.1:25190:25193:participant;0.0.0.0:25187\n\
     version=100000000",
    "server.1=localhost:2888:3888:participant\nserver.100=0.0.0.0:2889:3889:observer;0.0.0.0:2181\nversion=20000000a",
    "server.10=[fe80::1]:2888:3888:observer;[::1]:2181\nserver.2=b:1:2|a:3:4\nversion=1f",
    "server.1=a:1:2\nserver.2=b:1:2\ngroup.1=1:2\nweight.1=1\nweight.2=1\nversion=5",
    "# comment\r\nclientPort=2181\nserver.3=h:5:6;7\nversion = 3\n",
];

/// Pieces random configurations are made of: real keys, separators and the
/// characters the member syntax gives meaning to.
const PIECES: &[&str] = &[
    "server.",
    "version",
    "group.",
    "weight.",
    "=",
    ":",
    ";",
    "|",
    "[",
    "]",
    "\n",
    "\r",
    " ",
    "#",
    "!",
    "1",
    "2",
    "65535",
    "65536",
    "-1",
    "+",
    "0",
    "ff",
    "127.0.0.1",
    "::1",
    "participant",
    "observer",
    "0.0.0.0",
    "é",
    "\u{0}",
];

#[derive(Debug, Clone)]
enum Input {
    Bytes(Vec<u8>),
    Pieces(Vec<Index>),
    Mutated(Index, Vec<Edit>),
}

fn input() -> impl Strategy<Value = Input> {
    prop_oneof![
        2 => bytes(96).prop_map(Input::Bytes),
        4 => proptest::collection::vec(any::<Index>(), 0..40).prop_map(Input::Pieces),
        6 => (any::<Index>(), mutation()).prop_map(|(i, m)| Input::Mutated(i, m)),
    ]
}

fn bytes_of(input: &Input) -> Vec<u8> {
    match input {
        Input::Bytes(b) => b.clone(),
        Input::Pieces(ix) => ix
            .iter()
            .map(|i| PIECES[i.index(PIECES.len())])
            .collect::<String>()
            .into_bytes(),
        Input::Mutated(i, m) => mutate(SAMPLES[i.index(SAMPLES.len())].as_bytes(), m),
    }
}

/// Checks one input: no panic (the test would fail), no single allocation
/// over 8 bytes per input byte plus 2 KiB (a B-tree node), and a parsed configuration
/// round-trips through its text.
fn check(input: &[u8]) -> Result<(), TestCaseError> {
    let (parsed, largest) = largest_during(|| EnsembleConfig::parse(input));
    let bound = 8 * input.len() + 2048;
    prop_assert!(
        largest <= bound,
        "one allocation of {largest} bytes for {} input bytes",
        input.len()
    );
    match parsed {
        Ok(c) => {
            let text = c.to_string();
            let again = EnsembleConfig::parse(text.as_bytes());
            prop_assert_eq!(again.as_ref(), Ok(&c), "to_string gave {:?}", text);
            prop_assert_eq!(again.map(|a| a.to_string()), Ok(text));
        }
        Err(e) => {
            prop_assert!(!e.to_string().is_empty());
            if let ConfigError::BadLine { text, .. } | ConfigError::BadVersion { value: text } = &e {
                prop_assert!(text.chars().count() <= 81);
            }
        }
    }
    Ok(())
}

#[test]
fn every_sample_parses_and_round_trips() {
    for s in SAMPLES {
        let c = EnsembleConfig::parse(s.as_bytes()).unwrap_or_else(|e| panic!("{s:?}: {e}"));
        check(s.as_bytes()).unwrap();
        assert!(!c.members().is_empty());
    }
    // The first is the server's own text: written back byte for byte.
    assert_eq!(
        EnsembleConfig::parse(SAMPLES[0].as_bytes()).unwrap().to_string(),
        SAMPLES[0]
    );
}

proptest! {
    #![proptest_config(config(CASES))]

    /// Random bytes, random sequences of the syntax's pieces, and mutations
    /// of real configurations: `EnsembleConfig::parse` never panics, makes no
    /// single allocation over 8 bytes per input byte (+2 KiB), and what it
    /// parses is written as text that parses to the same configuration and
    /// is written the same again; an error's message is written and quotes
    /// at most 80 characters of the input.
    #[test]
    fn the_config_parser_survives_any_input(input in input()) {
        let b = bytes_of(&input);
        check(&b).map_err(|e| TestCaseError::fail(format!("{e} on {}", hexdump(&b))))?;
    }

    /// Whatever the pick of a sample's lines (dropped, repeated, reordered),
    /// the parser gives a configuration or a typed error, never a panic.
    #[test]
    fn any_pick_of_real_lines_parses_or_is_refused(lines in proptest::collection::vec(select(
        SAMPLES.iter().flat_map(|s| s.split('\n')).collect::<Vec<_>>()), 0..12)) {
        let text = lines.join("\n");
        check(text.as_bytes())?;
    }
}
