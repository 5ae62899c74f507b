//! zk-testing's integration tests, one binary with one module per suite: the
//! embedded server's wire protocol, faults, four-letter words and ACL
//! conformance (raw frames, and kazoo as a foreign client), and the Apache
//! ZooKeeper backends, and the throw-away Kerberos KDC. The helpers every crate's tests share are
//! `zk_testing::support`; [`support`] here is the raw-frame client of the
//! `embedded_*` suites. Run one suite with a module filter, e.g.
//! `cargo test -p zk-testing --test it apache_backend::`.

mod support;

mod acl_conformance;
mod apache_backend;
mod apache_reconfig;
mod embedded_faults;
mod embedded_fourlw;
mod embedded_protocol;
mod kdc;
mod partitions;
