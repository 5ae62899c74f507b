//! zk-proto's integration tests, one binary with one module per suite: the
//! decoders and the frame buffer fed random and mutated bytes. Run one suite
//! with a module filter, e.g. `cargo test -p zk-proto --test it fuzz_decoders::`.
//! (The records' round trips are unit tests beside the code.)

mod support;

mod fuzz_decoders;
