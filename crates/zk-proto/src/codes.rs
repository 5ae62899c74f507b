//! Numeric constants of the protocol: opcodes, error codes, watch event types,
//! session states, create modes, permissions and special xids.

use std::fmt;

/// Defines a `#[repr(i32)]` enum with `code()` and `from_code()`.
macro_rules! code_enum {
    ($(#[$m:meta])* $name:ident { $( $(#[$vm:meta])* $v:ident = $n:expr ),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(i32)]
        pub enum $name { $( $(#[$vm])* $v = $n, )* }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$v),*];

            /// The wire value.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("use zk_proto::", stringify!($name), ";")]
            #[doc = concat!("let v = ", stringify!($name), "::ALL[0];")]
            #[doc = concat!("assert_eq!(", stringify!($name), "::from_code(v.code()), Some(v));")]
            /// ```
            pub const fn code(self) -> i32 { self as i32 }

            /// The value for a wire number, if it is one of ours.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("use zk_proto::", stringify!($name), ";")]
            #[doc = concat!("assert_eq!(", stringify!($name), "::from_code(i32::MIN + 12345), None);")]
            /// ```
            pub fn from_code(n: i32) -> Option<Self> {
                match n { $( $n => Some($name::$v), )* _ => None }
            }
        }
    };
}

code_enum! {
    /// Request opcodes (`ZooDefs.OpCode`).
    OpCode {
        /// Internal: notification.
        Notification = 0,
        /// create.
        Create = 1,
        /// delete.
        Delete = 2,
        /// exists.
        Exists = 3,
        /// getData.
        GetData = 4,
        /// setData.
        SetData = 5,
        /// getACL.
        GetAcl = 6,
        /// setACL.
        SetAcl = 7,
        /// getChildren.
        GetChildren = 8,
        /// sync.
        Sync = 9,
        /// ping (xid -2).
        Ping = 11,
        /// getChildren2 (children plus the parent's Stat).
        GetChildren2 = 12,
        /// check (version check, normally inside multi).
        Check = 13,
        /// multi (atomic write transaction).
        Multi = 14,
        /// create2 (create, returning the Stat).
        Create2 = 15,
        /// reconfig.
        Reconfig = 16,
        /// checkWatches.
        CheckWatches = 17,
        /// removeWatches.
        RemoveWatches = 18,
        /// createContainer.
        CreateContainer = 19,
        /// deleteContainer (server internal).
        DeleteContainer = 20,
        /// createTTL.
        CreateTtl = 21,
        /// multiRead.
        MultiRead = 22,
        /// auth (xid -4).
        Auth = 100,
        /// setWatches (re-registration on reconnect).
        SetWatches = 101,
        /// sasl.
        Sasl = 102,
        /// getEphemerals.
        GetEphemerals = 103,
        /// getAllChildrenNumber.
        GetAllChildrenNumber = 104,
        /// setWatches2 (with persistent watches).
        SetWatches2 = 105,
        /// addWatch (persistent watches).
        AddWatch = 106,
        /// whoAmI.
        WhoAmI = 107,
        /// Internal: createSession.
        CreateSession = -10,
        /// closeSession.
        CloseSession = -11,
        /// Internal: error transaction.
        Error = -1,
    }
}

impl OpCode {
    /// The 4-letter name ZooKeeper's `cons` output uses for the last operation.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_proto::OpCode::GetChildren.short_name(), "GETC");
    /// ```
    pub fn short_name(self) -> &'static str {
        match self {
            OpCode::Notification => "NOTI",
            OpCode::Create | OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTtl => "CREA",
            OpCode::Delete | OpCode::DeleteContainer => "DELE",
            OpCode::Exists => "EXIS",
            OpCode::GetData => "GETD",
            OpCode::SetData => "SETD",
            OpCode::GetAcl => "GETA",
            OpCode::SetAcl => "SETA",
            OpCode::GetChildren | OpCode::GetChildren2 => "GETC",
            OpCode::Sync => "SYNC",
            OpCode::Ping => "PING",
            OpCode::Check => "CHEC",
            OpCode::Multi | OpCode::MultiRead => "MULT",
            OpCode::Reconfig => "RECO",
            OpCode::CheckWatches => "CHKW",
            OpCode::RemoveWatches => "REMW",
            OpCode::Auth => "AUTH",
            OpCode::SetWatches | OpCode::SetWatches2 => "SETW",
            OpCode::Sasl => "SASL",
            OpCode::GetEphemerals => "GETE",
            OpCode::GetAllChildrenNumber => "GETN",
            OpCode::AddWatch => "ADDW",
            OpCode::WhoAmI => "WHOA",
            OpCode::CreateSession => "SESS",
            OpCode::CloseSession => "CLOS",
            OpCode::Error => "ERR",
        }
    }
}

code_enum! {
    /// Result codes (`KeeperException.Code`).
    ErrorCode {
        /// Everything is OK.
        Ok = 0,
        /// A system or server-side error.
        SystemError = -1,
        /// A runtime inconsistency (in a failed multi: ops after the failing one).
        RuntimeInconsistency = -2,
        /// A data inconsistency.
        DataInconsistency = -3,
        /// The connection to the server was lost (client-side).
        ConnectionLoss = -4,
        /// A request or response could not be (de)serialized.
        MarshallingError = -5,
        /// The operation is not implemented.
        Unimplemented = -6,
        /// The operation timed out (client-side).
        OperationTimeout = -7,
        /// Invalid arguments (for example an invalid path).
        BadArguments = -8,
        /// Unknown session (internal).
        UnknownSession = -12,
        /// No quorum for a new config.
        NewConfigNoQuorum = -13,
        /// Reconfiguration in progress.
        ReconfigInProgress = -14,
        /// Base of the API errors.
        ApiError = -100,
        /// The node does not exist.
        NoNode = -101,
        /// Not authenticated.
        NoAuth = -102,
        /// Version conflict.
        BadVersion = -103,
        /// Ephemeral nodes may not have children.
        NoChildrenForEphemerals = -108,
        /// The node already exists.
        NodeExists = -110,
        /// The node has children.
        NotEmpty = -111,
        /// The session has been expired by the server.
        SessionExpired = -112,
        /// Invalid callback.
        InvalidCallback = -113,
        /// Invalid ACL.
        InvalidAcl = -114,
        /// Client authentication failed.
        AuthFailed = -115,
        /// The session moved to another server.
        SessionMoved = -118,
        /// State-changing request sent to a read-only server.
        NotReadOnly = -119,
        /// Ephemeral node on a local session.
        EphemeralOnLocalSession = -120,
        /// No such watcher.
        NoWatcher = -121,
        /// Request timeout.
        RequestTimeout = -122,
        /// Reconfig is disabled.
        ReconfigDisabled = -123,
        /// SASL required.
        SessionClosedRequireSaslAuth = -124,
        /// Quota exceeded.
        QuotaExceeded = -125,
        /// Request throttled.
        Throttled = -127,
    }
}

impl ErrorCode {
    /// ZooKeeper's name for the code, as in `KeeperErrorCode = NoNode`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_proto::ErrorCode::NoNode.name(), "NoNode");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            ErrorCode::Ok => "OK",
            ErrorCode::SystemError => "SystemError",
            ErrorCode::RuntimeInconsistency => "RuntimeInconsistency",
            ErrorCode::DataInconsistency => "DataInconsistency",
            ErrorCode::ConnectionLoss => "ConnectionLoss",
            ErrorCode::MarshallingError => "MarshallingError",
            ErrorCode::Unimplemented => "Unimplemented",
            ErrorCode::OperationTimeout => "OperationTimeout",
            ErrorCode::BadArguments => "BadArguments",
            ErrorCode::UnknownSession => "UnknownSession",
            ErrorCode::NewConfigNoQuorum => "NewConfigNoQuorum",
            ErrorCode::ReconfigInProgress => "ReconfigInProgress",
            ErrorCode::ApiError => "APIError",
            ErrorCode::NoNode => "NoNode",
            ErrorCode::NoAuth => "NoAuth",
            ErrorCode::BadVersion => "BadVersion",
            ErrorCode::NoChildrenForEphemerals => "NoChildrenForEphemerals",
            ErrorCode::NodeExists => "NodeExists",
            ErrorCode::NotEmpty => "NotEmpty",
            ErrorCode::SessionExpired => "SessionExpired",
            ErrorCode::InvalidCallback => "InvalidCallback",
            ErrorCode::InvalidAcl => "InvalidACL",
            ErrorCode::AuthFailed => "AuthFailed",
            ErrorCode::SessionMoved => "SessionMoved",
            ErrorCode::NotReadOnly => "NotReadOnly",
            ErrorCode::EphemeralOnLocalSession => "EphemeralOnLocalSession",
            ErrorCode::NoWatcher => "NoWatcher",
            ErrorCode::RequestTimeout => "RequestTimeout",
            ErrorCode::ReconfigDisabled => "ReconfigDisabled",
            ErrorCode::SessionClosedRequireSaslAuth => "SessionClosedRequireSaslAuth",
            ErrorCode::QuotaExceeded => "QuotaExceeded",
            ErrorCode::Throttled => "Throttled",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

code_enum! {
    /// Watch event types (`Watcher.Event.EventType`).
    EventType {
        /// A session state change (no node).
        None = -1,
        /// The watched node was created.
        NodeCreated = 1,
        /// The watched node was deleted.
        NodeDeleted = 2,
        /// The watched node's data changed.
        NodeDataChanged = 3,
        /// The watched node's children changed.
        NodeChildrenChanged = 4,
        /// A data watch was removed (client-side).
        DataWatchRemoved = 5,
        /// A child watch was removed (client-side).
        ChildWatchRemoved = 6,
        /// A persistent watch was removed (client-side).
        PersistentWatchRemoved = 7,
    }
}

code_enum! {
    /// Session states carried by watch events (`Watcher.Event.KeeperState`).
    KeeperState {
        /// Unknown (deprecated).
        Unknown = -1,
        /// The client lost its connection.
        Disconnected = 0,
        /// Deprecated.
        NoSyncConnected = 1,
        /// Connected; the state of every server-sent event.
        SyncConnected = 3,
        /// Authentication failed.
        AuthFailed = 4,
        /// Connected to a read-only server.
        ConnectedReadOnly = 5,
        /// SASL authenticated.
        SaslAuthenticated = 6,
        /// The session expired.
        Expired = -112,
        /// The client was closed.
        Closed = 7,
    }
}

code_enum! {
    /// Create modes, sent as the `flags` of a create request.
    CreateMode {
        /// A persistent node.
        Persistent = 0,
        /// A node deleted when its session ends.
        Ephemeral = 1,
        /// A persistent node with a sequence suffix.
        PersistentSequential = 2,
        /// An ephemeral node with a sequence suffix.
        EphemeralSequential = 3,
        /// A container: deleted by the server once it had children and is empty.
        Container = 4,
        /// A persistent node that expires after a TTL when it has no children.
        PersistentWithTtl = 5,
        /// A sequential persistent node with a TTL.
        PersistentSequentialWithTtl = 6,
    }
}

impl CreateMode {
    /// Whether the node dies with its session.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_proto::CreateMode::EphemeralSequential.is_ephemeral());
    /// ```
    pub fn is_ephemeral(self) -> bool {
        matches!(self, CreateMode::Ephemeral | CreateMode::EphemeralSequential)
    }

    /// Whether the server appends a sequence suffix.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_proto::CreateMode::PersistentSequential.is_sequential());
    /// ```
    pub fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential
                | CreateMode::EphemeralSequential
                | CreateMode::PersistentSequentialWithTtl
        )
    }

    /// Whether this is a container.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_proto::CreateMode::Container.is_container());
    /// ```
    pub fn is_container(self) -> bool {
        self == CreateMode::Container
    }

    /// Whether this is a TTL mode.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_proto::CreateMode::PersistentWithTtl.is_ttl());
    /// ```
    pub fn is_ttl(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentWithTtl | CreateMode::PersistentSequentialWithTtl
        )
    }
}

/// Permission bits of an ACL entry (`ZooDefs.Perms`).
pub mod perms {
    /// Read data and list children.
    pub const READ: i32 = 1;
    /// Set data.
    pub const WRITE: i32 = 2;
    /// Create children.
    pub const CREATE: i32 = 4;
    /// Delete children.
    pub const DELETE: i32 = 8;
    /// Set the ACL.
    pub const ADMIN: i32 = 16;
    /// Everything.
    pub const ALL: i32 = 31;
}

/// Reserved xids.
pub mod xid {
    /// A server → client watch notification.
    pub const NOTIFICATION: i32 = -1;
    /// A ping and its reply.
    pub const PING: i32 = -2;
    /// An auth packet and its reply.
    pub const AUTH: i32 = -4;
    /// SetWatches (the Java client replaces it with a normal xid before sending).
    pub const SET_WATCHES: i32 = -8;
}

/// Watcher types for checkWatches / removeWatches.
pub mod watcher_type {
    /// Child watches.
    pub const CHILDREN: i32 = 1;
    /// Data (and exists) watches.
    pub const DATA: i32 = 2;
    /// Any watch.
    pub const ANY: i32 = 3;
}

/// Modes of addWatch.
pub mod add_watch_mode {
    /// A persistent watch on one node.
    pub const PERSISTENT: i32 = 0;
    /// A persistent watch on a node and all its descendants.
    pub const PERSISTENT_RECURSIVE: i32 = 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for &c in OpCode::ALL {
            assert_eq!(OpCode::from_code(c.code()), Some(c));
            assert!(!c.short_name().is_empty());
        }
        for &c in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_code(c.code()), Some(c));
            assert!(!c.name().is_empty());
        }
        for &c in EventType::ALL {
            assert_eq!(EventType::from_code(c.code()), Some(c));
        }
        for &c in KeeperState::ALL {
            assert_eq!(KeeperState::from_code(c.code()), Some(c));
        }
        for &c in CreateMode::ALL {
            assert_eq!(CreateMode::from_code(c.code()), Some(c));
        }
        assert_eq!(CreateMode::from_code(7), None);
        assert_eq!(ErrorCode::from_code(-126), None);
        assert_eq!(ErrorCode::NoNode.code(), -101);
        assert_eq!(KeeperState::Expired.code(), -112);
    }
}
