//! Integration tests of `zk-framework` against the embedded server of
//! `zk-testing`, written with the crate-root paths a user imports.

mod connect;
mod epoch;
mod listeners;
