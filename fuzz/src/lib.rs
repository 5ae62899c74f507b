//! `zk-fuzz`: the coverage-guided fuzz targets of every decoder of hostile
//! bytes in the workspace, as plain functions. Each [`Target`]'s check takes
//! the fuzzer's input and checks properties (never only "no panic"); the same
//! function is the body of the AFL++ harness (`src/bin/target.rs`, built by
//! `scripts/fuzz.sh` with cargo-afl) and of the corpus' regression test
//! (`tests/corpus.rs`, an ordinary `cargo test -p zk-fuzz` that needs no
//! AFL), which runs every file of `fuzz/corpus/` and `fuzz/regressions/`
//! through every target.
//!
//! The checks measure allocations with [`alloc::Probe`], which the harness
//! and the test install as their global allocator; without it a check fails
//! ([`check`]).
//!
//! # Examples
//!
//! ```
//! # #[global_allocator] static A: zk_fuzz::alloc::Probe = zk_fuzz::alloc::Probe;
//! # fn main() {
//! let t = zk_fuzz::target("path").unwrap();
//! assert_eq!(zk_fuzz::check(t, b"/a/b"), Ok(()));
//! # }
//! ```

pub mod alloc;
pub mod corpus;
pub mod decode;
pub mod frame;
pub mod seeds;
pub mod server;
pub mod text;

/// What a check says: `Err` names the property that failed.
pub type Outcome = Result<(), String>;

/// One fuzz target: its name (its corpus' directory) and its check.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// The name, as `scripts/fuzz.sh` and the corpus' directories spell it.
    pub name: &'static str,
    /// What it fuzzes, in a line.
    pub about: &'static str,
    /// The check: the input's properties.
    pub check: fn(&[u8]) -> Outcome,
}

/// Every target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "records",
        about: "every wire record, primitive and nullable form of zk-proto (first byte: which)",
        check: decode::records,
    },
    Target {
        name: "client_reply",
        about: "what the client decodes from a server: handshake answer, reply header, bodies, watch events",
        check: decode::client_reply,
    },
    Target {
        name: "frame",
        about: "the frame reader (FrameBuffer, read_frame): limits, refusals before allocating",
        check: frame::frame,
    },
    Target {
        name: "server_request",
        about: "a client's bytes through the embedded server's request handling",
        check: server::server_request,
    },
    Target {
        name: "acl",
        about: "ACL entries and credentials a client gives, against the embedded server's rules",
        check: server::acl,
    },
    Target {
        name: "path",
        about: "ZooKeeper's path rules, against their documentation",
        check: text::path,
    },
    Target {
        name: "connect_string",
        about: "the connect-string parser: canonical form round trips",
        check: text::connect_string,
    },
    Target {
        name: "x509",
        about: "a client certificate's subject, as the server reads it",
        check: text::x509,
    },
    Target {
        name: "config",
        about: "the ensemble's configuration (/zookeeper/config): parse, write back, parse again",
        check: text::ensemble_config,
    },
];

/// The target named `name`.
///
/// # Examples
///
/// ```
/// assert!(zk_fuzz::target("frame").is_some());
/// assert!(zk_fuzz::target("nothing").is_none());
/// ```
pub fn target(name: &str) -> Option<Target> {
    TARGETS.iter().copied().find(|t| t.name == name)
}

/// Runs `t`'s check on `input`, first making sure allocations are measured
/// ([`alloc::installed`]).
///
/// # Errors
///
/// The property that failed, or that [`alloc::Probe`] is not the global
/// allocator.
///
/// # Examples
///
/// ```
/// // Without the probe installed, every check fails rather than pass unmeasured.
/// let t = zk_fuzz::target("path").unwrap();
/// assert!(zk_fuzz::check(t, b"/a").is_err());
/// ```
pub fn check(t: Target, input: &[u8]) -> Outcome {
    if !alloc::installed() {
        return Err("zk_fuzz::alloc::Probe is not the global allocator: allocations are not measured".into());
    }
    (t.check)(input)
}
