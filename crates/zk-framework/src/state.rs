//! Curator's connection states and the pure state machine that derives them from
//! session events; the session's health by the client's clock.

use std::fmt;

/// The session's health as the client's clock judges it, from the latest
/// request a server answered (see [`CuratorFramework::session_horizon`]).
///
/// [`CuratorFramework::session_horizon`]: crate::CuratorFramework::session_horizon
///
/// # Examples
///
/// ```no_run
/// use zk_framework::SessionHealth;
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// match client.session_health() {
///     SessionHealth::Confirmed => println!("the server answered within a read timeout"),
///     SessionHealth::Stale => println!("no answer for a read timeout: the session may be lost"),
///     SessionHealth::PastHorizon => println!("the server may have expired the session"),
/// }
/// # Ok::<(), zk_framework::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SessionHealth {
    /// A request sent within the read timeout (two thirds of the session
    /// timeout) has been answered.
    Confirmed,
    /// No request sent within the read timeout has been answered: the
    /// connection may be dead, but the session is alive until the horizon.
    Stale,
    /// The horizon has passed (or there is no session): the server may have
    /// expired the session.
    PastHorizon,
}

/// A session-health listener (see
/// [`CuratorFramework::add_health_listener`](crate::CuratorFramework::add_health_listener)).
pub type HealthListener = dyn Fn(SessionHealth) + Send + Sync;

/// The connection state a managed client reports, exactly Curator's.
///
/// # Examples
///
/// ```
/// use zk_framework::ConnectionState;
/// assert!(ConnectionState::Reconnected.is_connected());
/// assert!(!ConnectionState::Suspended.is_connected());
/// assert_eq!(ConnectionState::Lost.to_string(), "LOST");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConnectionState {
    /// The first successful connection of this client (sent exactly once).
    Connected,
    /// The connection was lost; the session may still be alive. Holders of locks
    /// cannot be sure they still hold them until `Reconnected`.
    Suspended,
    /// Connected again after `Suspended`, `Lost` or `ReadOnly` (the same session,
    /// or a new one after `Lost`).
    Reconnected,
    /// The session is gone: expired, replaced by a new handle, or the session
    /// timeout passed while suspended. Every ephemeral node, and so every lock,
    /// of the old session is lost.
    Lost,
    /// Connected to a read-only server.
    ReadOnly,
    /// The server refused the client's authentication (SASL: wrong
    /// credentials, a server without SASL or requiring it; or an `auth`
    /// packet it refused) and the client stopped: not one of Curator's five
    /// (Curator only logs ZooKeeper's `AuthFailed` event), added so that a
    /// holder hears it. Final: nothing is reported after it, no new session
    /// is made (the same credentials would be refused again), every call
    /// fails with [`Error::Sasl`](crate::Error::Sasl) or
    /// [`Error::AuthFailed`](crate::Error::AuthFailed). The session's
    /// ephemeral nodes, and so its locks, go when the server expires it:
    /// recipes treat it as [`ConnectionState::Lost`].
    AuthFailed,
}

impl ConnectionState {
    /// Whether the client can talk to ZooKeeper in this state.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_framework::ConnectionState::ReadOnly.is_connected());
    /// ```
    pub fn is_connected(self) -> bool {
        matches!(
            self,
            ConnectionState::Connected | ConnectionState::Reconnected | ConnectionState::ReadOnly
        )
    }
}

impl fmt::Display for ConnectionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConnectionState::Connected => "CONNECTED",
            ConnectionState::Suspended => "SUSPENDED",
            ConnectionState::Reconnected => "RECONNECTED",
            ConnectionState::Lost => "LOST",
            ConnectionState::ReadOnly => "READ_ONLY",
            ConnectionState::AuthFailed => "AUTH_FAILED",
        })
    }
}

/// What the session layer reports, as input to [`StateMachine`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SessionSignal {
    /// Connected (read-write). `new_handle` is true when the connection belongs to
    /// a handle other than the one that last connected (a new session after
    /// expiry or reset).
    Connected {
        /// Whether the handle changed since the last connection.
        new_handle: bool,
    },
    /// Connected to a read-only server.
    ConnectedReadOnly {
        /// Whether the handle changed since the last connection.
        new_handle: bool,
    },
    /// The connection was lost.
    Disconnected,
    /// The server said the session expired, the session was injected as expired,
    /// or the session timeout passed while suspended (simulated expiry).
    Expired,
    /// The handle ended because the server refused its authentication.
    AuthFailed,
}

/// Derives Curator's connection states from session signals.
///
/// Rules (Curator 5's `ConnectionStateManager` and `CuratorFrameworkImpl`):
/// a change to the current state is dropped; the first positive state is
/// reported as `Connected`, exactly once; `Disconnected` gives `Suspended`
/// unless already `Suspended` or `Lost`; `Expired` gives `Lost`; a connection
/// on a new handle gives `Lost` (if not already) then `Reconnected`; a
/// connection of the same handle while already connected gives nothing.
#[derive(Debug, Clone, Default)]
pub(crate) struct StateMachine {
    current: Option<ConnectionState>,
    connected_sent: bool,
}

impl StateMachine {
    /// A machine that has reported nothing yet.
    #[cfg(test)]
    fn new() -> Self {
        StateMachine::default()
    }

    /// The last state reported.
    pub(crate) fn current(&self) -> Option<ConnectionState> {
        self.current
    }

    fn post(&mut self, out: &mut Vec<ConnectionState>, mut s: ConnectionState) {
        if s == ConnectionState::Reconnected && !self.connected_sent {
            s = ConnectionState::Connected;
        }
        if s == ConnectionState::Connected {
            if self.connected_sent {
                s = ConnectionState::Reconnected;
            }
            self.connected_sent = true;
        }
        if self.current == Some(s) {
            return;
        }
        self.current = Some(s);
        out.push(s);
    }

    /// Feeds one signal; returns the states to report, in order (often none).
    pub(crate) fn apply(&mut self, signal: SessionSignal) -> Vec<ConnectionState> {
        let mut out = Vec::new();
        match signal {
            // The same handle reporting a connection it already reported (a
            // monitor that subscribed while the handle connected sees it twice):
            // nothing changed, so nothing is reported (else a spurious
            // RECONNECTED would follow CONNECTED).
            SessionSignal::Connected { new_handle: false }
                if matches!(
                    self.current,
                    Some(ConnectionState::Connected | ConnectionState::Reconnected)
                ) => {}
            SessionSignal::Connected { new_handle } | SessionSignal::ConnectedReadOnly { new_handle } => {
                if new_handle && self.connected_sent {
                    self.post(&mut out, ConnectionState::Lost);
                }
                let s = if matches!(signal, SessionSignal::ConnectedReadOnly { .. }) {
                    ConnectionState::ReadOnly
                } else {
                    ConnectionState::Reconnected
                };
                self.post(&mut out, s);
            }
            SessionSignal::Disconnected => {
                if !matches!(
                    self.current,
                    Some(ConnectionState::Lost | ConnectionState::Suspended | ConnectionState::AuthFailed)
                ) {
                    self.post(&mut out, ConnectionState::Suspended);
                }
            }
            SessionSignal::Expired if self.current == Some(ConnectionState::AuthFailed) => {}
            SessionSignal::Expired => self.post(&mut out, ConnectionState::Lost),
            SessionSignal::AuthFailed => self.post(&mut out, ConnectionState::AuthFailed),
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::ConnectionState::*;
    use super::SessionSignal::{ConnectedReadOnly, Disconnected, Expired};
    use super::*;

    fn run(signals: &[SessionSignal]) -> Vec<ConnectionState> {
        let mut m = StateMachine::new();
        signals.iter().flat_map(|&s| m.apply(s)).collect()
    }

    const C: SessionSignal = SessionSignal::Connected { new_handle: false };
    const NEW: SessionSignal = SessionSignal::Connected { new_handle: true };

    #[test]
    fn sequences_match_curator() {
        let table: &[(&str, &[SessionSignal], &[ConnectionState])] = &[
            ("start", &[C], &[Connected]),
            (
                "stop and restart within the session",
                &[C, Disconnected, C],
                &[Connected, Suspended, Reconnected],
            ),
            (
                "stop longer than the session, then restart",
                &[C, Disconnected, Expired, NEW],
                &[Connected, Suspended, Lost, Reconnected],
            ),
            ("injected expiry", &[C, Expired, NEW], &[Connected, Lost, Reconnected]),
            (
                "refused at the first connection",
                &[SessionSignal::AuthFailed, Disconnected, Expired],
                &[AuthFailed],
            ),
            (
                "refused on a reconnect: suspended, then auth failed, final",
                &[C, Disconnected, SessionSignal::AuthFailed, Disconnected, Expired],
                &[Connected, Suspended, AuthFailed],
            ),
            (
                "repeated disconnects",
                &[C, Disconnected, Disconnected, C, C],
                &[Connected, Suspended, Reconnected],
            ),
            (
                "disconnect after lost is ignored",
                &[C, Expired, Disconnected, NEW],
                &[Connected, Lost, Reconnected],
            ),
            (
                "new handle without an expiry event",
                &[C, Disconnected, NEW],
                &[Connected, Suspended, Lost, Reconnected],
            ),
            (
                "read only first does not use up connected",
                &[ConnectedReadOnly { new_handle: false }, C],
                &[ReadOnly, Connected],
            ),
            (
                "read only after connected",
                &[C, Disconnected, ConnectedReadOnly { new_handle: false }, C],
                &[Connected, Suspended, ReadOnly, Reconnected],
            ),
            (
                "never connected, suspended",
                &[Disconnected, C],
                &[Suspended, Connected],
            ),
            (
                "a repeated connection of the same handle is not a reconnect",
                &[C, C, Disconnected, C, C],
                &[Connected, Suspended, Reconnected],
            ),
            (
                "first connect on a 'new' handle is plain connected",
                &[NEW],
                &[Connected],
            ),
        ];
        for (name, signals, want) in table {
            assert_eq!(run(signals), *want, "{name}");
        }
    }
}
