//! `zk-proto`: the ZooKeeper client–server wire protocol (3.5–3.8), with no I/O
//! policy and no threads; its only dependencies are `ring` (SHA-1) and `base64`,
//! for [`digest`] ids, and `md-5` for [`sasl`]'s DIGEST-MD5. It is the bottom of the workspace: the
//! client and the managed client in `zk-framework` (which re-exports this crate as
//! `zk_framework::proto`) and the embedded test server in `zk-testing` both build on
//! it, so each record is written once.
//!
//! * [`jute`]: the record encoding (big-endian primitives, buffers, vectors).
//! * [`records`]: every record a client and a server exchange, in owned form for
//!   decoding, plus borrowed forms ([`CreateRequestRef`], [`SetDataRequestRef`]) that
//!   encode the same bytes without copying the caller's data.
//! * [`codes`]: opcodes, error codes, event types, states, create modes.
//! * [`config`]: the ensemble's dynamic configuration (`/zookeeper/config`), parsed and
//!   written back.
//! * [`frame`]: length-prefixed framing and four-letter-word detection.
//! * [`path`]: ZooKeeper's path rules.
//! * [`digest`]: the `digest` auth scheme's ids (`user:base64(sha1(user:password))`).
//! * [`x509`]: the `x509` auth scheme's ids (a client certificate's subject, RFC 2253).
//! * [`sasl`]: SASL's token record and the DIGEST-MD5 mechanism (both sides), by `md-5`.
//!
//! Decoding never panics: every malformed input is a [`DecodeError`].
//!
//! # Examples
//!
//! ```
//! use zk_proto::{frame::request_frame, jute::Decode, OpCode, PathWatchRequest, RequestHeader};
//! let f = request_frame(7, OpCode::GetData, Some(&PathWatchRequest { path: "/a".into(), watch: true }));
//! let mut r = zk_proto::jute::Reader::new(&f[4..]);
//! let h = RequestHeader::decode(&mut r).unwrap();
//! assert_eq!((h.xid, h.op), (7, OpCode::GetData.code()));
//! assert_eq!(PathWatchRequest::decode(&mut r).unwrap().path, "/a");
//! ```

pub mod codes;
pub mod config;
pub mod digest;
pub mod frame;
pub mod jute;
pub mod path;
pub mod records;
pub mod sasl;
pub mod x509;

pub use codes::{add_watch_mode, perms, watcher_type, xid, CreateMode, ErrorCode, EventType, KeeperState, OpCode};
pub use jute::{Decode, DecodeError, Encode};
pub use records::*;
