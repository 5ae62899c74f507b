#![doc = include_str!("../README.md")]
//! The umbrella crate re-exports the three workspace crates so that examples and
//! README snippets can use one name.

pub use zk_framework as framework;
pub use zk_recipes as recipes;
pub use zk_testing as testing;
