//! Curator-compatible lock recipes on top of `zk-framework`.
//!
//! * [`driver`]: the pure lock decision ("do I hold it; else which node do I
//!   watch") for every lock kind, tested as tables with no server.

pub mod driver;
