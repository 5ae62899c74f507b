//! zk-testing's integration tests, one binary with one module per suite: the
//! embedded server's wire protocol, faults and four-letter words, and the
//! Apache ZooKeeper backends. Run one suite with a module filter, e.g.
//! `cargo test -p zk-testing --test it apache_backend::`.

mod support;

mod apache_backend;
mod embedded_faults;
mod embedded_fourlw;
mod embedded_protocol;
mod partitions;
