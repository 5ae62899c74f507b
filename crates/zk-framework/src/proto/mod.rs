//! The ZooKeeper client–server wire protocol, written once for both the client in
//! this crate and the embedded server in `zk-testing`.
//!
//! * [`jute`]: the record encoding (big-endian primitives, buffers, vectors).
//! * [`records`]: every record the recipes, tests and helpers exchange.
//! * [`codes`]: opcodes, error codes, event types, states, create modes.
//! * [`frame`]: length-prefixed framing and four-letter-word detection.
//! * [`path`]: ZooKeeper's path rules.
//!
//! # Examples
//!
//! ```
//! use zk_framework::proto::{frame::request_frame, jute::Decode, OpCode, PathWatchRequest, RequestHeader};
//! let f = request_frame(7, OpCode::GetData, Some(&PathWatchRequest { path: "/a".into(), watch: true }));
//! let mut r = zk_framework::proto::jute::Reader::new(&f[4..]);
//! let h = RequestHeader::decode(&mut r).unwrap();
//! assert_eq!((h.xid, h.op), (7, OpCode::GetData.code()));
//! assert_eq!(PathWatchRequest::decode(&mut r).unwrap().path, "/a");
//! ```

pub mod codes;
pub mod frame;
pub mod jute;
pub mod path;
pub mod records;

pub use codes::{add_watch_mode, perms, watcher_type, xid, CreateMode, ErrorCode, EventType, KeeperState, OpCode};
pub use jute::{Decode, DecodeError, Encode};
pub use records::*;
