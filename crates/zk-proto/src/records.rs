//! The jute records of `zookeeper.jute` that clients and servers exchange.
//!
//! Field order is wire order. Records with identical shapes share one type, with
//! ZooKeeper's names kept as aliases.
//!
//! A record that is sent with large or caller-owned fields, or that a server must
//! read with null kept apart from empty, is written once as a generic record
//! (`CreateRequestOf<P, D, A>`) and named by aliases for each representation:
//! [`CreateRequest`] (owned, what decoders return), [`CreateRequestRef`] (borrowed,
//! what the client encodes without copying the caller's data) and, where a server
//! needs it, a nullable form such as `CreateRequestOf<String, Option<Vec<u8>>, Vec<Acl>>`.
//! Every representation writes the same bytes.

use super::codes::{perms, OpCode};
use super::jute::{record, Decode, DecodeError, Element, Encode, JuteWrite, Reader};

/// An identity: `(scheme, id)`, e.g. `("world", "anyone")`.
///
/// Decoding reads a null string (length -1) in either field as empty, as the
/// Java server accepts it: some clients send the `auth` scheme's id as null
/// (kazoo's `CREATOR_ALL_ACL`), and ZooKeeper ignores that id anyway.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Id {
    /// The auth scheme.
    pub scheme: String,
    /// The id within the scheme.
    pub id: String,
}
impl Encode for Id {
    fn encode(&self, out: &mut Vec<u8>) {
        self.scheme.encode(out);
        self.id.encode(out);
    }
}
impl Decode for Id {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let scheme = Option::<String>::decode(r)?.unwrap_or_default();
        let id = Option::<String>::decode(r)?.unwrap_or_default();
        Ok(Id { scheme, id })
    }
}
impl Element for Id {}

impl Id {
    /// The `digest` id of `user` with `password`:
    /// `digest:user:base64(sha1(user:password))` (see [`crate::digest::digest_id`]).
    /// Only the hash is kept; the password is not stored.
    ///
    /// # Examples
    ///
    /// ```
    /// let id = zk_proto::Id::digest("alice", "secret");
    /// assert_eq!((id.scheme.as_str(), id.id.as_str()), ("digest", "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E="));
    /// ```
    pub fn digest(user: &str, password: &str) -> Id {
        Id {
            scheme: "digest".into(),
            id: crate::digest::digest_id(&format!("{user}:{password}")),
        }
    }

    /// `ip:<addr>` or `ip:<addr>/<bits>` (an IPv4 or IPv6 address, optionally
    /// with a prefix length): matches clients connecting from those addresses.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_proto::Id::ip("10.0.0.0/8").id, "10.0.0.0/8");
    /// ```
    pub fn ip(expr: &str) -> Id {
        Id {
            scheme: "ip".into(),
            id: expr.into(),
        }
    }

    /// `x509:<subject>`: matches clients whose TLS client certificate has this
    /// subject, written as ZooKeeper writes it (Java's RFC 2253 form of the
    /// certificate's subject: RDNs last first, e.g. `CN=app,O=Example`, with
    /// `,` `+` `=` `"` `\` `<` `>` `#` `;` escaped by `\`). Needs TLS with client
    /// certificates and the `x509` auth provider on the server (ZooKeeper 3.8
    /// registers it when it has a `secureClientPort`).
    ///
    /// # Examples
    ///
    /// ```
    /// let id = zk_proto::Id::x509("CN=app,O=Example");
    /// assert_eq!((id.scheme.as_str(), id.id.as_str()), ("x509", "CN=app,O=Example"));
    /// ```
    pub fn x509(subject: &str) -> Id {
        Id {
            scheme: "x509".into(),
            id: subject.into(),
        }
    }

    /// `sasl:<id>`: matches connections that authenticated with SASL as `id`,
    /// written exactly as the server makes it (case-sensitive): the user for
    /// DIGEST-MD5 (`bob`); for Kerberos the client's principal after the
    /// server's `kerberos.removeHostFromPrincipal` and
    /// `kerberos.removeRealmFromPrincipal` switches (by default the whole
    /// principal, `app@EXAMPLE.COM`). Needs the server's
    /// `authProvider.N=org.apache.zookeeper.server.auth.SASLAuthenticationProvider`;
    /// without it a `sasl` ACL is `InvalidACL`.
    ///
    /// # Examples
    ///
    /// ```
    /// let id = zk_proto::Id::sasl("app@EXAMPLE.COM");
    /// assert_eq!((id.scheme.as_str(), id.id.as_str()), ("sasl", "app@EXAMPLE.COM"));
    /// ```
    pub fn sasl(id: &str) -> Id {
        Id {
            scheme: "sasl".into(),
            id: id.into(),
        }
    }
}

record! {
    /// One ACL entry: permission bits and an identity.
    Acl { /** Bits from [`perms`]. */ perms: i32, /** Who gets them. */ id: Id }
}
impl Element for Acl {}

impl Acl {
    /// `world:anyone` with the given permissions.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_proto::{perms, Acl};
    /// assert_eq!(Acl::world(perms::ALL).id.scheme, "world");
    /// ```
    pub fn world(perms: i32) -> Acl {
        Acl {
            perms,
            id: Id {
                scheme: "world".into(),
                id: "anyone".into(),
            },
        }
    }

    /// `OPEN_ACL_UNSAFE`: everything for everyone.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_proto::Acl::open_unsafe().len(), 1);
    /// ```
    pub fn open_unsafe() -> Vec<Acl> {
        vec![Acl::world(perms::ALL)]
    }

    /// `READ_ACL_UNSAFE`: read for everyone.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_proto::Acl::read_unsafe()[0].perms, 1);
    /// ```
    pub fn read_unsafe() -> Vec<Acl> {
        vec![Acl::world(perms::READ)]
    }

    /// `perms` for the `digest` identity of `user` with `password` (see
    /// [`Id::digest`]): the ACL entry that a session authenticated with
    /// `("digest", b"user:password")` passes.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_proto::{perms, Acl};
    /// let acl = Acl::digest("alice", "secret", perms::ALL);
    /// assert_eq!(acl.id.id, "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=");
    /// assert!(!format!("{acl:?}").contains("secret"));
    /// ```
    pub fn digest(user: &str, password: &str, perms: i32) -> Acl {
        Acl {
            perms,
            id: Id::digest(user, password),
        }
    }

    /// `perms` for the clients whose TLS client certificate has `subject` (see
    /// [`Id::x509`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_proto::{perms, Acl};
    /// let acl = Acl::x509("CN=app", perms::ALL);
    /// assert_eq!((acl.id.scheme.as_str(), acl.id.id.as_str()), ("x509", "CN=app"));
    /// ```
    pub fn x509(subject: &str, perms: i32) -> Acl {
        Acl {
            perms,
            id: Id::x509(subject),
        }
    }

    /// `perms` for the connections authenticated with SASL as `id` (see
    /// [`Id::sasl`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_proto::{perms, Acl};
    /// let acl = Acl::sasl("bob", perms::ALL);
    /// assert_eq!((acl.id.scheme.as_str(), acl.id.id.as_str()), ("sasl", "bob"));
    /// ```
    pub fn sasl(id: &str, perms: i32) -> Acl {
        Acl {
            perms,
            id: Id::sasl(id),
        }
    }

    /// `CREATOR_ALL_ACL` followed by `READ_ACL_UNSAFE`: everything for the
    /// authenticated creator, read for everyone else.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_proto::Acl::creator_all_read_others().len(), 2);
    /// ```
    pub fn creator_all_read_others() -> Vec<Acl> {
        let mut acl = Acl::creator_all();
        acl.extend(Acl::read_unsafe());
        acl
    }

    /// `CREATOR_ALL_ACL`: everything for the authenticated creator.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_proto::Acl::creator_all()[0].id.scheme, "auth");
    /// ```
    pub fn creator_all() -> Vec<Acl> {
        vec![Acl {
            perms: perms::ALL,
            id: Id {
                scheme: "auth".into(),
                id: String::new(),
            },
        }]
    }
}

record! {
    /// A node's metadata (68 bytes on the wire).
    Stat {
        /// zxid of the create.
        czxid: i64,
        /// zxid of the last data change.
        mzxid: i64,
        /// Creation time, ms since the epoch.
        ctime: i64,
        /// Last modification time, ms since the epoch.
        mtime: i64,
        /// Data version.
        version: i32,
        /// Child version (creates plus deletes of children).
        cversion: i32,
        /// ACL version.
        aversion: i32,
        /// Session id of an ephemeral node's owner, else 0.
        ephemeral_owner: i64,
        /// Length of the data.
        data_length: i32,
        /// Number of children.
        num_children: i32,
        /// zxid of the last child change.
        pzxid: i64,
    }
}

/// The first frame a client sends.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectRequest {
    /// Always 0.
    pub protocol_version: i32,
    /// The largest zxid the client has seen.
    pub last_zxid_seen: i64,
    /// Requested session timeout, ms.
    pub timeout: i32,
    /// 0 for a new session, else the session to reattach.
    pub session_id: i64,
    /// The session password (16 zero bytes for a new session).
    pub passwd: Vec<u8>,
    /// The optional trailing read-only flag (`None` when absent).
    pub read_only: Option<bool>,
}

impl Encode for ConnectRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_i32(self.protocol_version);
        out.put_i64(self.last_zxid_seen);
        out.put_i32(self.timeout);
        out.put_i64(self.session_id);
        out.put_buffer(Some(&self.passwd));
        if let Some(ro) = self.read_only {
            out.put_bool(ro);
        }
    }
}

impl Decode for ConnectRequest {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(ConnectRequest {
            protocol_version: r.read_i32()?,
            last_zxid_seen: r.read_i64()?,
            timeout: r.read_i32()?,
            session_id: r.read_i64()?,
            passwd: Vec::<u8>::decode(r)?,
            read_only: if r.is_empty() { None } else { Some(r.read_bool()?) },
        })
    }
}

/// The first frame a server sends.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectResponse {
    /// Always 0.
    pub protocol_version: i32,
    /// Negotiated session timeout, ms; 0 or less means the session is expired.
    pub timeout: i32,
    /// The session id (0 when expired).
    pub session_id: i64,
    /// The session password.
    pub passwd: Vec<u8>,
    /// The read-only flag, present only if the request carried one.
    pub read_only: Option<bool>,
}

impl Encode for ConnectResponse {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_i32(self.protocol_version);
        out.put_i32(self.timeout);
        out.put_i64(self.session_id);
        out.put_buffer(Some(&self.passwd));
        if let Some(ro) = self.read_only {
            out.put_bool(ro);
        }
    }
}

impl Decode for ConnectResponse {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(ConnectResponse {
            protocol_version: r.read_i32()?,
            timeout: r.read_i32()?,
            session_id: r.read_i64()?,
            passwd: Vec::<u8>::decode(r)?,
            read_only: if r.is_empty() { None } else { Some(r.read_bool()?) },
        })
    }
}

record! {
    /// Precedes every request after the handshake.
    RequestHeader { /** Request id, echoed in the reply. */ xid: i32, /** An [`OpCode`] value. */ op: i32 }
}

record! {
    /// Precedes every reply and notification.
    ReplyHeader {
        /// The request's xid (-1 notification, -2 ping, -4 auth).
        xid: i32,
        /// The server's last zxid after the request.
        zxid: i64,
        /// An [`super::ErrorCode`] value; a body follows only when 0.
        err: i32,
    }
}

record! {
    /// A watch notification body (after a `ReplyHeader` with xid -1).
    WatcherEvent {
        /// An [`super::EventType`] value.
        event_type: i32,
        /// A [`super::KeeperState`] value (always 3 from a server).
        state: i32,
        /// The node path (with the chroot).
        path: String,
    }
}

/// Credentials (`addauth`), sent with xid -4. Its `Debug` output shows the
/// scheme and the length of the credentials, never the credentials.
///
/// # Examples
///
/// ```
/// let p = zk_proto::AuthPacket { auth_type: 0, scheme: "digest".into(), auth: b"u:hunter2".to_vec() };
/// assert!(!format!("{p:?}").contains("hunter2"));
/// ```
#[derive(Clone, PartialEq, Eq, Default)]
pub struct AuthPacket {
    /// Always 0.
    pub auth_type: i32,
    /// e.g. "digest".
    pub scheme: String,
    /// e.g. b"user:pass".
    pub auth: Vec<u8>,
}
impl std::fmt::Debug for AuthPacket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthPacket")
            .field("auth_type", &self.auth_type)
            .field("scheme", &self.scheme)
            .field("auth", &format_args!("<{} bytes redacted>", self.auth.len()))
            .finish()
    }
}
impl Encode for AuthPacket {
    fn encode(&self, out: &mut Vec<u8>) {
        self.auth_type.encode(out);
        self.scheme.encode(out);
        self.auth.encode(out);
    }
}
impl Decode for AuthPacket {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(AuthPacket {
            auth_type: i32::decode(r)?,
            scheme: String::decode(r)?,
            auth: Vec::<u8>::decode(r)?,
        })
    }
}

record! {
    /// Re-registers watches after a reconnect.
    SetWatches {
        /// The client's last zxid: changes after it fire at once.
        relative_zxid: i64,
        /// Data (getData) watches.
        data_watches: Vec<String>,
        /// Exists watches on missing nodes.
        exist_watches: Vec<String>,
        /// Child watches.
        child_watches: Vec<String>,
    }
}

record! {
    /// SetWatches with persistent watches.
    SetWatches2 {
        /// The client's last zxid.
        relative_zxid: i64,
        /// Data (getData) watches.
        data_watches: Vec<String>,
        /// Exists watches on missing nodes.
        exist_watches: Vec<String>,
        /// Child watches.
        child_watches: Vec<String>,
        /// Persistent watches.
        persistent_watches: Vec<String>,
        /// Persistent recursive watches.
        persistent_recursive_watches: Vec<String>,
    }
}

record! {
    /// create, create2 and createContainer request, generic over the representation of
    /// its path (`P`), data (`D`) and ACL (`A`); see [`CreateRequest`] and
    /// [`CreateRequestRef`].
    CreateRequestOf<P, D, A> {
        /// The path (the prefix, for sequential modes).
        path: P,
        /// Node data.
        data: D,
        /// The node's ACL.
        acl: A,
        /// A [`super::CreateMode`] value.
        flags: i32,
    }
}

/// create request, owned (what decoding returns; null data reads as empty).
pub type CreateRequest = CreateRequestOf<String, Vec<u8>, Vec<Acl>>;
/// create request, borrowed: encodes the same bytes as [`CreateRequest`] without
/// copying the data or the ACL.
///
/// # Examples
///
/// ```
/// use zk_proto::{Acl, CreateRequest, CreateRequestRef, Encode};
/// let acl = Acl::open_unsafe();
/// let borrowed = CreateRequestRef { path: "/a", data: b"x", acl: &acl, flags: 0 };
/// let owned = CreateRequest { path: "/a".into(), data: b"x".to_vec(), acl: acl.clone(), flags: 0 };
/// assert_eq!(borrowed.to_bytes(), owned.to_bytes());
/// ```
pub type CreateRequestRef<'a> = CreateRequestOf<&'a str, &'a [u8], &'a [Acl]>;

record! {
    /// createTTL request, generic like [`CreateRequestOf`]; see [`CreateTtlRequest`]
    /// and [`CreateTtlRequestRef`].
    CreateTtlRequestOf<P, D, A> {
        /// The path.
        path: P,
        /// Node data.
        data: D,
        /// The node's ACL.
        acl: A,
        /// A [`super::CreateMode`] value.
        flags: i32,
        /// Time to live, ms.
        ttl: i64,
    }
}

/// createTTL request, owned.
pub type CreateTtlRequest = CreateTtlRequestOf<String, Vec<u8>, Vec<Acl>>;
/// createTTL request, borrowed (the same bytes as [`CreateTtlRequest`]).
///
/// # Examples
///
/// ```
/// use zk_proto::{Acl, CreateTtlRequestRef, Encode};
/// let req = CreateTtlRequestRef { path: "/t", data: b"", acl: &Acl::open_unsafe(), flags: 5, ttl: 1000 };
/// // path, data, ACL count, perms, "world", "anyone", flags, ttl
/// assert_eq!(req.to_bytes().len(), (4 + 2) + 4 + 4 + 4 + (4 + 5) + (4 + 6) + 4 + 8);
/// ```
pub type CreateTtlRequestRef<'a> = CreateTtlRequestOf<&'a str, &'a [u8], &'a [Acl]>;

record! {
    /// A request or response that carries only a path (getACL, sync, create reply,
    /// ...), generic over the path's representation (`Option<String>` where a server
    /// reads a path that may be null); see [`PathRecord`].
    PathRecordOf<P> { /** The path. */ path: P }
}

/// A record with only a (non-null) path.
pub type PathRecord = PathRecordOf<String>;

/// `CreateResponse{path}`.
pub type CreateResponse = PathRecord;
/// `GetACLRequest{path}`.
pub type GetAclRequest = PathRecord;
/// `SyncRequest{path}`.
pub type SyncRequest = PathRecord;
/// `SyncResponse{path}`.
pub type SyncResponse = PathRecord;
/// `GetAllChildrenNumberRequest{path}`.
pub type GetAllChildrenNumberRequest = PathRecord;
/// `GetEphemeralsRequest{prefixPath}`.
pub type GetEphemeralsRequest = PathRecord;

record! {
    /// create2 / createContainer / createTTL response.
    Create2Response { /** The actual path. */ path: String, /** The new node's Stat. */ stat: Stat }
}

record! {
    /// delete request, generic over the path's representation; see [`DeleteRequest`].
    DeleteRequestOf<P> { /** The path. */ path: P, /** Expected version, -1 for any. */ version: i32 }
}

/// delete request, owned.
pub type DeleteRequest = DeleteRequestOf<String>;

/// `CheckVersionRequest{path, version}`.
pub type CheckVersionRequest = DeleteRequest;

record! {
    /// exists, getData, getChildren and getChildren2 request.
    PathWatchRequest { /** The path. */ path: String, /** Whether to leave a watch. */ watch: bool }
}

/// `ExistsRequest`.
pub type ExistsRequest = PathWatchRequest;
/// `GetDataRequest`.
pub type GetDataRequest = PathWatchRequest;
/// `GetChildrenRequest`.
pub type GetChildrenRequest = PathWatchRequest;
/// `GetChildren2Request`.
pub type GetChildren2Request = PathWatchRequest;

record! {
    /// A response that is just a Stat (exists, setData, setACL).
    StatResponse { /** The node's Stat. */ stat: Stat }
}

/// `ExistsResponse{stat}`.
pub type ExistsResponse = StatResponse;
/// `SetDataResponse{stat}`.
pub type SetDataResponse = StatResponse;
/// `SetACLResponse{stat}`.
pub type SetAclResponse = StatResponse;

record! {
    /// getData response, generic over the data's representation; see [`GetDataResponse`].
    GetDataResponseOf<D> { /** The data. */ data: D, /** The node's Stat. */ stat: Stat }
}

/// getData response, owned (null data reads as empty). A server writes it borrowed
/// from its node, null kept: `GetDataResponseOf<Option<&[u8]>>`.
pub type GetDataResponse = GetDataResponseOf<Vec<u8>>;

record! {
    /// setData request, generic over the path (`P`) and data (`D`); see
    /// [`SetDataRequest`] and [`SetDataRequestRef`].
    SetDataRequestOf<P, D> { /** The path. */ path: P, /** New data. */ data: D, /** Expected version, -1 for any. */ version: i32 }
}

/// setData request, owned.
pub type SetDataRequest = SetDataRequestOf<String, Vec<u8>>;
/// setData request, borrowed (the same bytes as [`SetDataRequest`], no copy of the data).
///
/// # Examples
///
/// ```
/// use zk_proto::{Encode, SetDataRequest, SetDataRequestRef};
/// let borrowed = SetDataRequestRef { path: "/a", data: b"v2", version: -1 };
/// let owned = SetDataRequest { path: "/a".into(), data: b"v2".to_vec(), version: -1 };
/// assert_eq!(borrowed.to_bytes(), owned.to_bytes());
/// ```
pub type SetDataRequestRef<'a> = SetDataRequestOf<&'a str, &'a [u8]>;

record! {
    /// getACL response.
    GetAclResponse { /** The ACL. */ acl: Vec<Acl>, /** The node's Stat. */ stat: Stat }
}

record! {
    /// setACL request, generic over the path (`P`) and ACL (`A`); see
    /// [`SetAclRequest`] and [`SetAclRequestRef`].
    SetAclRequestOf<P, A> { /** The path. */ path: P, /** The new ACL. */ acl: A, /** Expected aversion, -1 for any. */ version: i32 }
}

/// setACL request, owned.
pub type SetAclRequest = SetAclRequestOf<String, Vec<Acl>>;
/// setACL request, borrowed (the same bytes as [`SetAclRequest`], no copy of the ACL).
///
/// # Examples
///
/// ```
/// use zk_proto::{Acl, Encode, SetAclRequest, SetAclRequestRef};
/// let acl = Acl::read_unsafe();
/// let borrowed = SetAclRequestRef { path: "/a", acl: &acl, version: 0 };
/// assert_eq!(borrowed.to_bytes(), SetAclRequest { path: "/a".into(), acl, version: 0 }.to_bytes());
/// ```
pub type SetAclRequestRef<'a> = SetAclRequestOf<&'a str, &'a [Acl]>;

record! {
    /// getChildren response (names in server order; clients sort), generic over the
    /// list's representation; see [`GetChildrenResponse`].
    GetChildrenResponseOf<C> { /** Child names. */ children: C }
}

/// getChildren response, owned. A server writes it borrowed from its node:
/// `GetChildrenResponseOf<Vec<&str>>`.
pub type GetChildrenResponse = GetChildrenResponseOf<Vec<String>>;

record! {
    /// getChildren2 response, generic like [`GetChildrenResponseOf`]; see
    /// [`GetChildren2Response`].
    GetChildren2ResponseOf<C> { /** Child names. */ children: C, /** The parent's Stat. */ stat: Stat }
}

/// getChildren2 response, owned.
pub type GetChildren2Response = GetChildren2ResponseOf<Vec<String>>;

record! {
    /// Header of each op in a multi request and result in a multi response.
    MultiHeader { /** Op or result type; -1 ends the list. */ op_type: i32, /** True on the closing header. */ done: bool, /** Error code (-1 in requests). */ err: i32 }
}

record! {
    /// A bare error code (multi error results, addWatch reply).
    ErrorResponse { /** The error code. */ err: i32 }
}

record! {
    /// checkWatches / removeWatches request.
    WatchTypeRequest { /** The path. */ path: String, /** A [`super::watcher_type`] value. */ watcher_type: i32 }
}

/// `CheckWatchesRequest`.
pub type CheckWatchesRequest = WatchTypeRequest;
/// `RemoveWatchesRequest`.
pub type RemoveWatchesRequest = WatchTypeRequest;

record! {
    /// addWatch request, generic over the path's representation; see [`AddWatchRequest`].
    AddWatchRequestOf<P> { /** The path. */ path: P, /** A [`super::add_watch_mode`] value. */ mode: i32 }
}

/// addWatch request, owned.
pub type AddWatchRequest = AddWatchRequestOf<String>;

record! {
    /// reconfig request (opcode 16), sent by a client to change the ensemble's
    /// membership; the reply is a [`GetDataResponse`]: the new configuration
    /// (see [`crate::config`]) and the Stat of `/zookeeper/config`.
    ///
    /// The incremental form sets `joining_servers` (comma-separated
    /// `server.<id>=<member>` entries, each with a client port) and/or
    /// `leaving_servers` (comma-separated ids) and leaves `new_members` null;
    /// the non-incremental form sets `new_members` (the whole new member
    /// list, comma- or newline-separated) and leaves the other two null. An
    /// absent part is null (length -1), never `""`, which is a present, empty
    /// list.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_proto::{Encode, ReconfigRequest};
    /// let req = ReconfigRequest { leaving_servers: Some("3".into()), cur_config_id: -1, ..Default::default() };
    /// let bytes = req.to_bytes();
    /// assert_eq!(&bytes[..4], &[0xff; 4]); // joining: null
    /// assert_eq!(bytes.len(), 4 + (4 + 1) + 4 + 8);
    /// ```
    ReconfigRequest {
        /// Servers to add (or to change, by id), comma-separated; null for none.
        joining_servers: Option<String>,
        /// Server ids to remove, comma-separated; null for none.
        leaving_servers: Option<String>,
        /// The whole new member list (non-incremental); null for an incremental change.
        new_members: Option<String>,
        /// The configuration version the change applies to (the `version=`
        /// value of `/zookeeper/config`), or -1 for any.
        cur_config_id: i64,
    }
}

record! {
    /// getEphemerals response.
    GetEphemeralsResponse { /** The caller's ephemeral paths. */ ephemerals: Vec<String> }
}

record! {
    /// getAllChildrenNumber response.
    GetAllChildrenNumberResponse { /** Number of descendants. */ total_number: i32 }
}

record! {
    /// One identity of the caller (whoAmI).
    ClientInfo { /** Auth scheme. */ auth_scheme: String, /** User. */ user: String }
}
impl Element for ClientInfo {}

record! {
    /// whoAmI response.
    WhoAmIResponse { /** The caller's identities. */ client_info: Vec<ClientInfo> }
}

/// One operation of a multi (14) or multiRead (22) request, generic over the
/// representation of node data (`D`): see [`MultiOp`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiOpOf<D> {
    /// create (op type 1), create2 (15) or createContainer (19); the mode is in the flags.
    Create {
        /// The op type as sent: 1, 15 or 19.
        op: OpCode,
        /// The request.
        request: CreateRequestOf<String, D, Vec<Acl>>,
    },
    /// createTTL (21).
    CreateTtl(CreateTtlRequestOf<String, D, Vec<Acl>>),
    /// delete (2).
    Delete(DeleteRequest),
    /// setData (5).
    SetData(SetDataRequestOf<String, D>),
    /// check (13).
    Check(CheckVersionRequest),
    /// getData (4), multiRead only.
    GetData(GetDataRequest),
    /// getChildren (8), multiRead only.
    GetChildren(GetChildrenRequest),
}

/// One operation of a multi, owned (null data reads as empty).
pub type MultiOp = MultiOpOf<Vec<u8>>;

impl<D: Encode> MultiOpOf<D> {
    /// The op type written in the op's header.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_proto::{DeleteRequest, MultiOp, OpCode};
    /// let op = MultiOp::Delete(DeleteRequest { path: "/a".into(), version: -1 });
    /// assert_eq!(op.op_code(), OpCode::Delete);
    /// ```
    pub fn op_code(&self) -> OpCode {
        match self {
            MultiOpOf::Create { op, .. } => *op,
            MultiOpOf::CreateTtl(_) => OpCode::CreateTtl,
            MultiOpOf::Delete(_) => OpCode::Delete,
            MultiOpOf::SetData(_) => OpCode::SetData,
            MultiOpOf::Check(_) => OpCode::Check,
            MultiOpOf::GetData(_) => OpCode::GetData,
            MultiOpOf::GetChildren(_) => OpCode::GetChildren,
        }
    }

    /// The path the op acts on.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_proto::{DeleteRequest, MultiOp};
    /// let op = MultiOp::Delete(DeleteRequest { path: "/a".into(), version: -1 });
    /// assert_eq!(op.path(), "/a");
    /// ```
    pub fn path(&self) -> &str {
        match self {
            MultiOpOf::Create { request, .. } => &request.path,
            MultiOpOf::CreateTtl(r) => &r.path,
            MultiOpOf::Delete(r) | MultiOpOf::Check(r) => &r.path,
            MultiOpOf::SetData(r) => &r.path,
            MultiOpOf::GetData(r) | MultiOpOf::GetChildren(r) => &r.path,
        }
    }

    fn encode_body(&self, out: &mut Vec<u8>) {
        match self {
            MultiOpOf::Create { request, .. } => request.encode(out),
            MultiOpOf::CreateTtl(r) => r.encode(out),
            MultiOpOf::Delete(r) | MultiOpOf::Check(r) => r.encode(out),
            MultiOpOf::SetData(r) => r.encode(out),
            MultiOpOf::GetData(r) | MultiOpOf::GetChildren(r) => r.encode(out),
        }
    }
}

/// A multi or multiRead request: ops followed by the closing header. Generic over
/// the representation of node data: see [`MultiRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultiRequestOf<D> {
    /// The operations, in order.
    pub ops: Vec<MultiOpOf<D>>,
}

impl<D> Default for MultiRequestOf<D> {
    fn default() -> Self {
        MultiRequestOf { ops: Vec::new() }
    }
}

/// A multi request, owned (null data reads as empty). A server that must keep null
/// data apart reads a `MultiRequestOf<Option<Vec<u8>>>`: the same bytes.
pub type MultiRequest = MultiRequestOf<Vec<u8>>;

const DONE: MultiHeader = MultiHeader {
    op_type: -1,
    done: true,
    err: -1,
};

impl<D: Encode> Encode for MultiRequestOf<D> {
    fn encode(&self, out: &mut Vec<u8>) {
        for op in &self.ops {
            MultiHeader {
                op_type: op.op_code().code(),
                done: false,
                err: -1,
            }
            .encode(out);
            op.encode_body(out);
        }
        DONE.encode(out);
    }
}

impl<D: Decode> Decode for MultiRequestOf<D> {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let mut ops = Vec::new();
        loop {
            let h = MultiHeader::decode(r)?;
            if h.done {
                return Ok(MultiRequestOf { ops });
            }
            let op = match OpCode::from_code(h.op_type) {
                Some(op @ (OpCode::Create | OpCode::Create2 | OpCode::CreateContainer)) => MultiOpOf::Create {
                    op,
                    request: CreateRequestOf::decode(r)?,
                },
                Some(OpCode::CreateTtl) => MultiOpOf::CreateTtl(CreateTtlRequestOf::decode(r)?),
                Some(OpCode::Delete) => MultiOpOf::Delete(DeleteRequest::decode(r)?),
                Some(OpCode::SetData) => MultiOpOf::SetData(SetDataRequestOf::decode(r)?),
                Some(OpCode::Check) => MultiOpOf::Check(CheckVersionRequest::decode(r)?),
                Some(OpCode::GetData) => MultiOpOf::GetData(GetDataRequest::decode(r)?),
                Some(OpCode::GetChildren) => MultiOpOf::GetChildren(GetChildrenRequest::decode(r)?),
                _ => return Err(DecodeError::InvalidValue("multi op type")),
            };
            ops.push(op);
        }
    }
}

/// One result of a multi or multiRead response, generic over the representation of
/// node data (`D`): see [`MultiResult`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiResultOf<D> {
    /// A plain create (type 1): the actual path.
    Create {
        /// The created path.
        path: String,
    },
    /// A container or TTL create (type 15): path and Stat.
    Create2 {
        /// The created path.
        path: String,
        /// The new node's Stat.
        stat: Stat,
    },
    /// A delete (type 2).
    Delete,
    /// A setData (type 5).
    SetData {
        /// The node's new Stat.
        stat: Stat,
    },
    /// A check (type 13).
    Check,
    /// A getData (type 4, multiRead).
    GetData {
        /// The data.
        data: D,
        /// The Stat.
        stat: Stat,
    },
    /// A getChildren (type 8, multiRead).
    GetChildren {
        /// Child names.
        children: Vec<String>,
    },
    /// An error (type -1) with its code.
    Error {
        /// An [`super::ErrorCode`] value.
        err: i32,
    },
}

/// One result of a multi, owned (null data reads as empty).
pub type MultiResult = MultiResultOf<Vec<u8>>;

/// A multi or multiRead response, generic over the representation of node data: see
/// [`MultiResponse`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultiResponseOf<D> {
    /// One result per op, in order.
    pub results: Vec<MultiResultOf<D>>,
}

impl<D> Default for MultiResponseOf<D> {
    fn default() -> Self {
        MultiResponseOf { results: Vec::new() }
    }
}

/// A multi or multiRead response, owned (null data reads as empty). A server that
/// keeps null data writes a `MultiResponseOf<Option<Vec<u8>>>`: the same layout.
pub type MultiResponse = MultiResponseOf<Vec<u8>>;

impl<D: Encode> Encode for MultiResponseOf<D> {
    fn encode(&self, out: &mut Vec<u8>) {
        for res in &self.results {
            let (op_type, err) = match res {
                MultiResultOf::Create { .. } => (OpCode::Create.code(), 0),
                MultiResultOf::Create2 { .. } => (OpCode::Create2.code(), 0),
                MultiResultOf::Delete => (OpCode::Delete.code(), 0),
                MultiResultOf::SetData { .. } => (OpCode::SetData.code(), 0),
                MultiResultOf::Check => (OpCode::Check.code(), 0),
                MultiResultOf::GetData { .. } => (OpCode::GetData.code(), 0),
                MultiResultOf::GetChildren { .. } => (OpCode::GetChildren.code(), 0),
                MultiResultOf::Error { err } => (-1, *err),
            };
            MultiHeader {
                op_type,
                done: false,
                err,
            }
            .encode(out);
            match res {
                MultiResultOf::Create { path } => path.encode(out),
                MultiResultOf::Create2 { path, stat } => {
                    path.encode(out);
                    stat.encode(out);
                }
                MultiResultOf::Delete | MultiResultOf::Check => {}
                MultiResultOf::SetData { stat } => stat.encode(out),
                MultiResultOf::GetData { data, stat } => {
                    data.encode(out);
                    stat.encode(out);
                }
                MultiResultOf::GetChildren { children } => children.encode(out),
                MultiResultOf::Error { err } => err.encode(out),
            }
        }
        DONE.encode(out);
    }
}

impl<D: Decode> Decode for MultiResponseOf<D> {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let mut results = Vec::new();
        loop {
            let h = MultiHeader::decode(r)?;
            if h.done {
                return Ok(MultiResponseOf { results });
            }
            let res = match h.op_type {
                -1 => MultiResultOf::Error { err: r.read_i32()? },
                t => match OpCode::from_code(t) {
                    Some(OpCode::Create) => MultiResultOf::Create {
                        path: String::decode(r)?,
                    },
                    Some(OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTtl) => MultiResultOf::Create2 {
                        path: String::decode(r)?,
                        stat: Stat::decode(r)?,
                    },
                    Some(OpCode::Delete) => MultiResultOf::Delete,
                    Some(OpCode::SetData) => MultiResultOf::SetData { stat: Stat::decode(r)? },
                    Some(OpCode::Check) => MultiResultOf::Check,
                    Some(OpCode::GetData) => MultiResultOf::GetData {
                        data: D::decode(r)?,
                        stat: Stat::decode(r)?,
                    },
                    Some(OpCode::GetChildren) => MultiResultOf::GetChildren {
                        children: Vec::<String>::decode(r)?,
                    },
                    _ => return Err(DecodeError::InvalidValue("multi result type")),
                },
            };
            results.push(res);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Debug;

    fn rt<T: Encode + Decode + PartialEq + Debug>(v: T) {
        let bytes = v.to_bytes();
        assert_eq!(T::from_bytes(&bytes).unwrap(), v, "round trip of {v:?}");
        // Every strict prefix must fail to decode, never panic.
        for cut in 0..bytes.len() {
            let _ = T::from_bytes(&bytes[..cut]);
        }
    }

    fn stat() -> Stat {
        Stat {
            czxid: 1,
            mzxid: 2,
            ctime: 3,
            mtime: 4,
            version: 5,
            cversion: -1,
            aversion: 7,
            ephemeral_owner: 0x0100_0000_0000_0001,
            data_length: 9,
            num_children: 10,
            pzxid: 11,
        }
    }

    #[test]
    fn every_record_round_trips() {
        let acl = Acl::open_unsafe();
        rt(stat());
        assert_eq!(stat().to_bytes().len(), 68);
        rt(Id {
            scheme: "digest".into(),
            id: "u:x".into(),
        });
        rt(acl[0].clone());
        rt(ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 5,
            timeout: 30000,
            session_id: 0,
            passwd: vec![0; 16],
            read_only: Some(false),
        });
        assert_eq!(
            ConnectRequest {
                passwd: vec![0; 16],
                read_only: Some(false),
                ..Default::default()
            }
            .to_bytes()
            .len(),
            45
        );
        rt(ConnectRequest {
            read_only: None,
            ..Default::default()
        });
        rt(ConnectResponse {
            protocol_version: 0,
            timeout: 4000,
            session_id: 77,
            passwd: vec![1; 16],
            read_only: Some(false),
        });
        rt(ConnectResponse {
            read_only: None,
            passwd: vec![1; 16],
            ..Default::default()
        });
        rt(RequestHeader { xid: 1, op: 4 });
        rt(ReplyHeader {
            xid: -1,
            zxid: -1,
            err: 0,
        });
        rt(WatcherEvent {
            event_type: 1,
            state: 3,
            path: "/k1/nonexist".into(),
        });
        rt(AuthPacket {
            auth_type: 0,
            scheme: "digest".into(),
            auth: b"u:p".to_vec(),
        });
        rt(SetWatches {
            relative_zxid: 9,
            data_watches: vec!["/a".into()],
            exist_watches: vec!["/b".into()],
            child_watches: vec![],
        });
        rt(SetWatches2 {
            relative_zxid: 9,
            data_watches: vec!["/a".into()],
            exist_watches: vec![],
            child_watches: vec!["/c".into()],
            persistent_watches: vec!["/p".into()],
            persistent_recursive_watches: vec!["/r".into()],
        });
        let create = CreateRequest {
            path: "/a".into(),
            data: b"x".to_vec(),
            acl: acl.clone(),
            flags: 3,
        };
        rt(create.clone());
        rt(CreateTtlRequest {
            path: "/t".into(),
            data: vec![],
            acl: acl.clone(),
            flags: 5,
            ttl: 1000,
        });
        rt(PathRecord { path: "/a".into() });
        rt(Create2Response {
            path: "/a".into(),
            stat: stat(),
        });
        rt(DeleteRequest {
            path: "/a".into(),
            version: -1,
        });
        rt(PathWatchRequest {
            path: "/a".into(),
            watch: true,
        });
        rt(StatResponse { stat: stat() });
        rt(GetDataResponse {
            data: vec![1, 2],
            stat: stat(),
        });
        rt(SetDataRequest {
            path: "/a".into(),
            data: vec![3],
            version: 2,
        });
        rt(GetAclResponse {
            acl: acl.clone(),
            stat: stat(),
        });
        rt(SetAclRequest {
            path: "/a".into(),
            acl: acl.clone(),
            version: 0,
        });
        rt(GetChildrenResponse {
            children: vec!["a".into(), "b".into()],
        });
        rt(GetChildren2Response {
            children: vec!["a".into()],
            stat: stat(),
        });
        rt(MultiHeader {
            op_type: -1,
            done: true,
            err: -1,
        });
        rt(ErrorResponse { err: -101 });
        rt(WatchTypeRequest {
            path: "/a".into(),
            watcher_type: 3,
        });
        rt(AddWatchRequest {
            path: "/a".into(),
            mode: 1,
        });
        rt(GetEphemeralsResponse {
            ephemerals: vec!["/e".into()],
        });
        rt(GetAllChildrenNumberResponse { total_number: 3 });
        rt(ReconfigRequest {
            joining_servers: Some("server.4=127.0.0.1:1:2;3".into()),
            leaving_servers: None,
            new_members: Some(String::new()),
            cur_config_id: 0x1_0000_0000,
        });
        rt(ReconfigRequest::default());
        rt(WhoAmIResponse {
            client_info: vec![ClientInfo {
                auth_scheme: "ip".into(),
                user: "127.0.0.1".into(),
            }],
        });
        rt(MultiRequest {
            ops: vec![
                MultiOp::Create {
                    op: OpCode::Create,
                    request: create.clone(),
                },
                MultiOp::Create {
                    op: OpCode::CreateContainer,
                    request: create.clone(),
                },
                MultiOp::CreateTtl(CreateTtlRequest {
                    path: "/t".into(),
                    data: vec![],
                    acl,
                    flags: 5,
                    ttl: 10,
                }),
                MultiOp::Delete(DeleteRequest {
                    path: "/a".into(),
                    version: 1,
                }),
                MultiOp::SetData(SetDataRequest {
                    path: "/a".into(),
                    data: vec![],
                    version: -1,
                }),
                MultiOp::Check(DeleteRequest {
                    path: "/a".into(),
                    version: 0,
                }),
                MultiOp::GetData(PathWatchRequest {
                    path: "/a".into(),
                    watch: false,
                }),
                MultiOp::GetChildren(PathWatchRequest {
                    path: "/".into(),
                    watch: false,
                }),
            ],
        });
        rt(MultiRequest::default());
        rt(MultiResponse {
            results: vec![
                MultiResult::Create { path: "/a".into() },
                MultiResult::Create2 {
                    path: "/c".into(),
                    stat: stat(),
                },
                MultiResult::Delete,
                MultiResult::SetData { stat: stat() },
                MultiResult::Check,
                MultiResult::GetData {
                    data: vec![1],
                    stat: stat(),
                },
                MultiResult::GetChildren {
                    children: vec!["x".into()],
                },
                MultiResult::Error { err: -2 },
            ],
        });
    }

    #[test]
    fn borrowed_and_nullable_forms_write_the_same_bytes() {
        let acl = Acl::open_unsafe();
        let owned = CreateRequest {
            path: "/a".into(),
            data: b"x".to_vec(),
            acl: acl.clone(),
            flags: 3,
        };
        let borrowed = CreateRequestRef {
            path: "/a",
            data: b"x",
            acl: &acl,
            flags: 3,
        };
        assert_eq!(borrowed.to_bytes(), owned.to_bytes());
        let ttl = CreateTtlRequestRef {
            path: "/t",
            data: b"",
            acl: &acl,
            flags: 5,
            ttl: 9,
        };
        let ttl_owned = CreateTtlRequest::from_bytes(&ttl.to_bytes()).unwrap();
        assert_eq!((ttl_owned.path.as_str(), ttl_owned.ttl), ("/t", 9));
        let sd = SetDataRequestRef {
            path: "/a",
            data: b"v",
            version: 4,
        };
        assert_eq!(
            SetDataRequest::from_bytes(&sd.to_bytes()).unwrap(),
            SetDataRequest {
                path: "/a".into(),
                data: b"v".to_vec(),
                version: 4
            }
        );
        let sa = SetAclRequestRef {
            path: "/a",
            acl: &acl,
            version: 1,
        };
        assert_eq!(SetAclRequest::from_bytes(&sa.to_bytes()).unwrap().acl, acl);
        // The nullable forms keep null apart from empty and read the same bytes.
        type NullCreate = CreateRequestOf<String, Option<Vec<u8>>, Vec<Acl>>;
        let null = NullCreate {
            path: "/n".into(),
            data: None,
            acl: acl.clone(),
            flags: 0,
        };
        let bytes = null.to_bytes();
        assert_eq!(NullCreate::from_bytes(&bytes).unwrap(), null);
        assert_eq!(CreateRequest::from_bytes(&bytes).unwrap().data, Vec::<u8>::new());
        let null_path = SetDataRequestOf::<Option<String>, Option<Vec<u8>>> {
            path: None,
            data: None,
            version: -1,
        };
        assert_eq!(null_path.to_bytes(), [[0xff; 4], [0xff; 4], [0xff; 4]].concat());
        rt(null_path);
        let multi = MultiRequestOf::<Option<Vec<u8>>> {
            ops: vec![
                MultiOpOf::Create {
                    op: OpCode::Create,
                    request: null,
                },
                MultiOpOf::SetData(SetDataRequestOf {
                    path: "/n".into(),
                    data: Some(vec![1]),
                    version: -1,
                }),
            ],
        };
        rt(multi.clone());
        assert_eq!(MultiRequest::from_bytes(&multi.to_bytes()).unwrap().ops.len(), 2);
        rt(MultiResponseOf::<Option<Vec<u8>>> {
            results: vec![MultiResultOf::GetData {
                data: None,
                stat: stat(),
            }],
        });
    }

    #[test]
    fn multi_rejects_unknown_op_types() {
        let mut bytes = Vec::new();
        MultiHeader {
            op_type: 99,
            done: false,
            err: -1,
        }
        .encode(&mut bytes);
        assert_eq!(
            MultiRequest::from_bytes(&bytes),
            Err(DecodeError::InvalidValue("multi op type"))
        );
    }

    #[test]
    fn null_id_strings_decode_as_empty() {
        // kazoo's CREATOR_ALL_ACL: ACL(31, Id("auth", None)), the id a null ustring.
        let mut bytes = Vec::new();
        "/n".encode(&mut bytes);
        b"".encode(&mut bytes);
        1i32.encode(&mut bytes);
        31i32.encode(&mut bytes);
        "auth".encode(&mut bytes);
        (-1i32).encode(&mut bytes);
        0i32.encode(&mut bytes);
        let req = CreateRequest::from_bytes(&bytes).unwrap();
        assert_eq!(req.acl, Acl::creator_all());
        // A null scheme too (the server then answers InvalidACL, as ZooKeeper does).
        let id = Id::from_bytes(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, b'x']).unwrap();
        assert_eq!((id.scheme.as_str(), id.id.as_str()), ("", "x"));
    }

    #[test]
    fn auth_packet_round_trips_and_hides_its_credentials() {
        rt(AuthPacket {
            auth_type: 0,
            scheme: "digest".into(),
            auth: b"user:s3cret-pw".to_vec(),
        });
        let p = AuthPacket {
            auth_type: 0,
            scheme: "digest".into(),
            auth: b"user:s3cret-pw".to_vec(),
        };
        let shown = format!("{p:?} {p:#?}");
        assert!(shown.contains("digest") && shown.contains("14 bytes"), "{shown}");
        assert!(!shown.contains("s3cret"), "{shown}");
    }

    #[test]
    fn connect_request_wire_bytes_match_zookeeper() {
        // 45 bytes for a new session with the read-only byte, as all clients send it.
        let req = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            timeout: 30000,
            session_id: 0,
            passwd: vec![0; 16],
            read_only: Some(false),
        };
        let b = req.to_bytes();
        assert_eq!(b.len(), 45);
        assert_eq!(&b[12..16], &30000i32.to_be_bytes());
        assert_eq!(&b[24..28], &16i32.to_be_bytes());
    }
}
