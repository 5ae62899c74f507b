//! The embedded server's checks: a hostile connection's bytes through the
//! server's request handling (`server_request`), and the ACLs a client sends
//! (`acl`), on `zk_testing::embedded::Replay` (the server's state fed in
//! memory, as its reader threads feed it).

use zk_proto::frame::{frame, request_frame, FrameBuffer};
use zk_proto::jute::Decode;
use zk_proto::{
    Acl, AuthPacket, ConnectRequest, ConnectResponse, Encode, ErrorCode, GetAclResponse, GetDataResponse, Id, OpCode,
    PathRecord, PathWatchRequest, ReplyHeader, SetAclRequest,
};
use zk_testing::embedded::{Replay, ServerConfig};

use crate::alloc::largest_during;
use crate::Outcome;

/// The limit of a single allocation while the server takes `len` bytes: the
/// bytes buffered, replies and tables in proportion to them, and a fixed
/// allowance (a new session, a four-letter word's answer).
fn server_allocation_bound(len: usize) -> usize {
    64 * len + 64 * 1024
}

fn new_server() -> Result<Replay, String> {
    let cfg = ServerConfig {
        x509_auth: true,
        ..ServerConfig::default()
    };
    Replay::new(cfg).map_err(|e| format!("no replay server: {e}"))
}

/// The frames in `bytes` (replies of the server), or why they are not
/// frames.
fn frames_of(bytes: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let mut fb = FrameBuffer::new(i32::MAX as usize);
    fb.extend(bytes);
    let mut out = Vec::new();
    while let Some(f) = fb.next_frame().map_err(|e| format!("a reply's length: {e}"))? {
        out.push(f);
    }
    if fb.buffered() > 0 {
        return Err(format!("{} bytes of a partial frame after the replies", fb.buffered()));
    }
    Ok(out)
}

/// A well-behaved client's session on a new connection: the handshake,
/// then a request; returns the connection and the reply's header and body.
struct Probe {
    conn: u64,
}

impl Probe {
    fn open(server: &mut Replay) -> Result<Probe, String> {
        let conn = server.connect().map_err(|e| format!("no connection: {e}"))?;
        let hello = ConnectRequest {
            timeout: 10_000,
            passwd: vec![0; 16],
            read_only: Some(false),
            ..ConnectRequest::default()
        };
        let fed = server.feed(conn, &frame(|o| hello.encode(o)));
        let frames = frames_of(&fed.replies)?;
        let [answer] = frames.as_slice() else {
            return Err(format!("{} frames answered a handshake", frames.len()));
        };
        let resp = ConnectResponse::from_bytes(answer).map_err(|e| format!("the handshake's answer: {e}"))?;
        if !fed.established || fed.closed || resp.session_id == 0 || resp.timeout <= 0 {
            return Err(format!("a well-formed handshake was refused: {resp:?}"));
        }
        Ok(Probe { conn })
    }

    fn call(
        &self,
        server: &mut Replay,
        xid: i32,
        op: OpCode,
        body: &dyn zk_proto::frame::EncodeDyn,
    ) -> Result<(ReplyHeader, Vec<u8>), String> {
        let fed = server.feed(self.conn, &request_frame(xid, op, Some(body)));
        for f in frames_of(&fed.replies)? {
            let h = ReplyHeader::from_bytes(&f[..f.len().min(16)]).map_err(|e| format!("a reply's header: {e}"))?;
            if h.xid == xid {
                return Ok((h, f[16..].to_vec()));
            }
            if h.xid != -1 {
                return Err(format!("a reply to xid {} came for request {xid} ({op:?})", h.xid));
            }
        }
        Err(format!("no reply to request {xid} ({op:?}); closed: {}", fed.closed))
    }
}

/// The `server_request` target: the input is what one client sends on a
/// connection to the embedded server (a handshake, requests, anything),
/// fed in two pieces (cut at the position the first byte picks). Checked:
/// no panic; no single allocation over a bound linear in the input's length;
/// what the server queued is whole frames (or a four-letter word's text),
/// the first a `ConnectResponse` when the handshake was taken, every other
/// one starting with a `ReplyHeader`; the zxid never goes back; and then the
/// server still serves a well-behaved client on a new connection: its
/// handshake is answered with a session, a node created with data reads back
/// with that data.
///
/// # Errors
///
/// The property that failed.
///
/// # Examples
///
/// ```
/// # #[global_allocator] static A: zk_fuzz::alloc::Probe = zk_fuzz::alloc::Probe;
/// # fn main() {
/// assert!(zk_fuzz::server::server_request(b"\x00\x00\x00\x00\x05garbage").is_ok());
/// # }
/// ```
pub fn server_request(input: &[u8]) -> Outcome {
    let mut server = new_server()?;
    let conn = server.connect().map_err(|e| format!("no connection: {e}"))?;
    let cut = input.first().map_or(0, |&b| b as usize).min(input.len());
    let (a, b) = input.split_at(cut);
    let mut replies = Vec::new();
    let mut established = false;
    let mut last_zxid = server.zxid();
    for piece in [a, b] {
        let (fed, largest) = largest_during(|| server.feed(conn, piece));
        let bound = server_allocation_bound(input.len());
        if largest > bound {
            return Err(format!(
                "one allocation of {largest} bytes serving {} input bytes (bound {bound})",
                input.len()
            ));
        }
        replies.extend_from_slice(&fed.replies);
        established = fed.established;
        let zxid = server.zxid();
        if zxid < last_zxid {
            return Err(format!("the zxid went back from {last_zxid} to {zxid}"));
        }
        last_zxid = zxid;
        if fed.closed {
            break;
        }
    }
    let four_letter =
        input.len() >= 4 && zk_proto::frame::four_letter_word([input[0], input[1], input[2], input[3]]).is_some();
    if !four_letter {
        let frames = frames_of(&replies)?;
        for (i, f) in frames.iter().enumerate() {
            if i == 0 && established {
                ConnectResponse::from_bytes(f).map_err(|e| format!("the handshake's answer: {e}"))?;
            } else if f.len() < 16 || ReplyHeader::from_bytes(&f[..16]).is_err() {
                return Err(format!("reply {i} of {} bytes has no header", f.len()));
            }
        }
        if !established && !frames.is_empty() && frames.len() > 1 {
            return Err(format!(
                "{} frames answered a connection without a session",
                frames.len()
            ));
        }
    }
    still_serves(&mut server)
}

/// A well-behaved client still gets served: a handshake, a create and a read.
fn still_serves(server: &mut Replay) -> Outcome {
    let probe = Probe::open(server)?;
    let path = format!("/zk-fuzz-probe-{}", server.zxid());
    let create = zk_proto::CreateRequest {
        path: path.clone(),
        data: b"probe".to_vec(),
        acl: Acl::open_unsafe(),
        flags: 0,
    };
    let (h, _) = probe.call(server, 1, OpCode::Create, &create)?;
    if h.err != 0 {
        return Err(format!(
            "creating {path} after the input failed: {:?}",
            ErrorCode::from_code(h.err)
        ));
    }
    let (h, body) = probe.call(
        server,
        2,
        OpCode::GetData,
        &PathWatchRequest {
            path: path.clone(),
            watch: false,
        },
    )?;
    let data = GetDataResponse::from_bytes(&body).map_err(|e| format!("getData's reply: {e}"))?;
    if h.err != 0 || data.data != b"probe" {
        return Err(format!("reading {path} back: err {} data {:?}", h.err, data.data));
    }
    Ok(())
}

/// The `acl` target: an ACL entry a client gives in text, `scheme:id`, with
/// the first byte as its permissions; the text is also read as credentials
/// (`scheme:credentials`). Checked against the embedded server, on a
/// connection authenticated with digest `u:p` (the `auth` scheme expands to
/// it): a create with that ACL is either refused with `InvalidACL` (and no
/// node is made), or made, and then its ACL reads back as the server's rule
/// says (the entry as given; for `auth`, the connection's digest id; a
/// digest id's hash masked for a reader without ADMIN); a
/// setACL with it gives the same answer. The client's rule for credentials
/// (`ClientConfig::validate_auth`) accepts only a non-empty scheme without
/// whitespace, control characters or ':', and for digest a non-empty user
/// before a ':'. An `x509` id's validity (`zk_proto::x509::valid_id`) never
/// panics.
///
/// # Errors
///
/// The property that failed.
///
/// # Examples
///
/// ```
/// # #[global_allocator] static A: zk_fuzz::alloc::Probe = zk_fuzz::alloc::Probe;
/// # fn main() {
/// assert!(zk_fuzz::server::acl(b"\x1fip:10.0.0.0/8").is_ok());
/// assert!(zk_fuzz::server::acl(b"\x01digest:u:Zm9v").is_ok());
/// # }
/// ```
pub fn acl(input: &[u8]) -> Outcome {
    let Some((&perms, text)) = input.split_first() else {
        return Ok(());
    };
    let text = String::from_utf8_lossy(text);
    let (scheme, id) = text.split_once(':').unwrap_or((&text, ""));
    credentials(scheme, id.as_bytes())?;
    let _ = zk_proto::x509::valid_id(id);
    let entry = Acl {
        perms: i32::from(perms & 0x1f),
        id: Id {
            scheme: scheme.to_string(),
            id: id.to_string(),
        },
    };
    let mut server = new_server()?;
    let probe = Probe::open(&mut server)?;
    let auth = AuthPacket {
        auth_type: 0,
        scheme: "digest".into(),
        auth: b"u:p".to_vec(),
    };
    let (h, _) = probe.call(&mut server, -4, OpCode::Auth, &auth)?;
    if h.err != 0 {
        return Err(format!("addauth digest u:p failed: {}", h.err));
    }
    let create = zk_proto::CreateRequest {
        path: "/acl".into(),
        data: vec![],
        acl: vec![entry.clone()],
        flags: 0,
    };
    let (h, _) = probe.call(&mut server, 1, OpCode::Create, &create)?;
    let expected = match entry.id.scheme.as_str() {
        "auth" => vec![Acl {
            perms: entry.perms,
            id: Id {
                scheme: "digest".into(),
                id: zk_proto::digest::digest_id("u:p"),
            },
        }],
        _ => vec![entry.clone()],
    };
    let get = PathRecord { path: "/acl".into() };
    match ErrorCode::from_code(h.err) {
        Some(ErrorCode::Ok) => {
            let (h, body) = probe.call(&mut server, 2, OpCode::GetAcl, &get)?;
            if h.err != 0 {
                // The ACL may forbid reading it (no READ... getACL needs none in 3.8 but the
                // server may refuse): only a refusal by permissions is allowed.
                if h.err != ErrorCode::NoAuth.code() {
                    return Err(format!("getACL of a node just made failed: {}", h.err));
                }
            } else {
                let got = GetAclResponse::from_bytes(&body).map_err(|e| format!("getACL's reply: {e}"))?;
                // Without ADMIN, a digest id comes back with its hash masked
                // (`user:x`), as ZooKeeper 3.8 shows it.
                let masked: Vec<Acl> = expected
                    .iter()
                    .map(|a| match a.id.scheme.as_str() {
                        "digest" => Acl {
                            perms: a.perms,
                            id: Id {
                                scheme: "digest".into(),
                                id: format!("{}:x", a.id.id.split(':').next().unwrap_or("")),
                            },
                        },
                        _ => a.clone(),
                    })
                    .collect();
                if got.acl != expected && got.acl != masked {
                    return Err(format!("ACL {entry:?} was stored as {:?}", got.acl));
                }
            }
        }
        Some(ErrorCode::InvalidAcl) => {
            let (h, _) = probe.call(&mut server, 2, OpCode::GetAcl, &get)?;
            if h.err != ErrorCode::NoNode.code() {
                return Err(format!(
                    "a create refused with InvalidACL made a node (getACL: {})",
                    h.err
                ));
            }
            // setACL on "/" with the same entry: refused the same way.
            let set = SetAclRequest {
                path: "/".into(),
                acl: vec![entry.clone()],
                version: -1,
            };
            let (h, _) = probe.call(&mut server, 3, OpCode::SetAcl, &set)?;
            if h.err != ErrorCode::InvalidAcl.code() {
                return Err(format!(
                    "setACL of {entry:?} answered {} where create said InvalidACL",
                    h.err
                ));
            }
        }
        other => return Err(format!("create with ACL {entry:?} answered {other:?} ({})", h.err)),
    }
    Ok(())
}

/// The client's rule for credentials, checked against its documentation.
fn credentials(scheme: &str, auth: &[u8]) -> Outcome {
    let ok = zk_framework::ClientConfig::validate_auth(scheme, auth).is_ok();
    let scheme_ok = !scheme.is_empty() && !scheme.chars().any(|c| c.is_whitespace() || c.is_control() || c == ':');
    let user_ok = scheme != "digest" || auth.iter().position(|&b| b == b':').is_some_and(|i| i > 0);
    if ok != (scheme_ok && user_ok) {
        return Err(format!(
            "validate_auth({scheme:?}, {:?}) = {ok}",
            String::from_utf8_lossy(auth)
        ));
    }
    Ok(())
}
