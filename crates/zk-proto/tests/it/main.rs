//! zk-proto's integration tests, one binary with one module per suite: the
//! decoders and the frame buffer fed random and mutated bytes, as proptest
//! properties, and the ensemble configuration parser (`config_parse`). Run one suite with a module filter, e.g.
//! `cargo test -p zk-proto --test it fuzz_decoders::`.
//! (The records' round trips are unit tests beside the code.)

mod alloc;

/// Every allocation of this binary, measured by [`alloc::largest_during`].
#[global_allocator]
static ALLOCATOR: alloc::Probe = alloc::Probe;

mod config_parse;
mod fuzz_decoders;
