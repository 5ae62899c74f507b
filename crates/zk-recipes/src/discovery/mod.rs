//! Service discovery, wire-compatible with Curator 5's `curator-x-discovery`
//! (what Apache Dubbo, Spring Cloud Zookeeper, Druid and Armeria register
//! with): [`ServiceDiscovery`](crate::ServiceDiscovery) registers
//! [`ServiceInstance`](crate::ServiceInstance)s and queries them, in
//! Curator's layout and JSON, so that Java and Rust services find each
//! other in one registry.
//!
//! # Layout and JSON
//!
//! Instance `<id>` of service `<name>` is the node `<base>/<name>/<id>`;
//! `<base>` and `<base>/<name>` are created as containers (the server deletes
//! them once empty). The node's mode comes from the instance's
//! [`ServiceType`](crate::ServiceType): `Dynamic` an ephemeral node,
//! `DynamicSequential` an ephemeral sequential one, `Static` and `Permanent`
//! a persistent one. The node holds the JSON Curator 5's
//! `JsonInstanceSerializer` writes ([`ServiceInstance::to_json`](crate::ServiceInstance::to_json)): compact,
//! keys in its order, nulls written, strings escaped as Jackson escapes them,
//! byte for byte the same as Curator's for the same instance; read leniently
//! as Jackson reads it ([`ServiceInstance::from_json`](crate::ServiceInstance::from_json)).
//!
//! # Curator's traps, and what we do
//!
//! * **`enabled` is never written by default.** Curator's default serializer
//!   (and Spring's, and Dubbo's) runs in "compatible" mode and drops
//!   `enabled`, so `enabled(false)` comes back enabled. Ours too by default
//!   ([`JsonMode::Compatible`](crate::JsonMode::Compatible)); [`JsonMode::Full`](crate::JsonMode::Full) writes it. Reading, a
//!   missing `enabled` is true and `"enabled":null` is **false** (Java's
//!   primitive default), as in Jackson.
//! * **Unknown fields.** Curator >= 2.12 ignores them; Curator <= 2.11 fails
//!   on them. We keep the unknown top-level fields of an instance we read
//!   and write them back after the known ones
//!   ([`ServiceInstance::unknown_fields`](crate::ServiceInstance::unknown_fields)),
//!   so a field a newer writer added survives our update (unknown fields
//!   inside `uriSpec` are dropped).
//! * **The payload's class tag.** A Java reader deserializes the payload
//!   into its `payloadClass` and fails the whole instance on another tag:
//!   Spring's and Dubbo's `ZookeeperInstance` have the same fields and cannot
//!   read each other's; Druid (`ServiceInstance<Void>`) reads no instance
//!   that has a payload. We keep the payload as opaque JSON, byte for byte
//!   ([`Payload`](crate::Payload)), and give typed helpers that write the tag you name
//!   ([`Payload::typed`](crate::Payload::typed), [`ZookeeperInstance`](crate::ZookeeperInstance) for Spring's and Dubbo's).
//! * **Druid's `sslPort: -1`.** Curator's `{scheme}` is `https` whenever an
//!   SSL port is set, even `-1`. [`UriSpec::build`](crate::UriSpec::build) does the same (it is
//!   Curator's template); [`ServiceInstance::endpoint`](crate::ServiceInstance::endpoint) treats ports `<= 0`
//!   as absent.
//! * **Re-registration on every reconnect.** Curator deletes and re-creates
//!   every instance's node on every CONNECTED and RECONNECTED (so that
//!   watchers fire), so each connection blip makes every cache elsewhere see
//!   the instance vanish and return (CURATOR-320: services "thrash"). Ours
//!   is a [`PersistentNode`](crate::PersistentNode): after a reconnect it looks at the node (an
//!   `exists` on the new connection) and, when it is still there and ours,
//!   leaves it in place (same czxid); it re-creates the node only when the
//!   server shows it gone (a session expiry, a delete).
//! * **A duplicate after an expiry** (Dubbo #5125). Curator's create, on
//!   NodeExists, deletes whatever is at the path and creates again, taking
//!   over another session's node (the old session's, still alive on the
//!   server, or another process's with the same id). Ours never touches an
//!   ephemeral node owned by another session: the registration says
//!   [`AbsentReason::OwnedByAnotherSession`](crate::AbsentReason::OwnedByAnotherSession) and our node is created once that
//!   one is gone (its deletion is watched). One node per id, always.
//! * **`DYNAMIC_SEQUENTIAL` duplicates.** Curator re-registers a sequential
//!   instance after every reconnect with a new sequence number (the old node
//!   lives on until the session ends) and its unregister deletes a path that
//!   does not exist. Ours keeps the node's first name across re-creations,
//!   protected (`_c_<uuid>-<id><seq>`) so that a create whose reply is lost
//!   is found again, and unregister deletes the node it made.
//! * **Stale data after an update** (CURATOR-146/181, fixed): an update is
//!   kept by the node and written on every re-creation.
//! * **An operator's edit** (`watchInstances`): with
//!   [`watch_instances`](crate::ServiceDiscoveryBuilder::watch_instances) an
//!   edit of our node (say `enabled: false`) is what we keep and write on a
//!   re-creation, as Curator does; without it, a re-creation writes our
//!   data back.
//! * **Unregister racing the reconnect** (CURATOR-164, fixed in Curator): an
//!   unregistered instance's node is closed first, then deleted; no create
//!   is begun once its close has begun, and one in flight is undone.
//! * **`STATIC`/`PERMANENT` deleted at close** (CURATOR-94, open). Ours:
//!   [`ServiceDiscovery::close`](crate::ServiceDiscovery::close) leaves a static or permanent instance's node in
//!   place (it is meant to outlive the process; a later discovery with the
//!   same instance takes it over with its data);
//!   [`ServiceDiscovery::unregister`](crate::ServiceDiscovery::unregister) deletes it.
//! * **One bad child fails the query.** Curator's `queryForInstances`
//!   throws when one child's JSON does not parse. Ours answers per child
//!   ([`InstanceRead`](crate::InstanceRead)).
//! * **`queryForNames` throws NoNode** once the base container was reaped;
//!   ours answers no names.
//!
//! # Following a service: the cache and the provider
//!
//! [`ServiceCache`](crate::ServiceCache) follows one service's instances
//! with a [`CuratorCache`](crate::CuratorCache) (children of
//! `<base>/<name>`, keyed by node name) and says how current its list is
//! ([`freshness`](crate::ServiceCache::freshness),
//! [`current_instances`](crate::ServiceCache::current_instances)); Curator's
//! `getInstances()` has "no guarantee of freshness" (CURATOR-705).
//! [`ServiceProvider`](crate::ServiceProvider) picks one with Curator's
//! strategies (round robin with a wrapping counter: Curator's goes out of
//! bounds after 2^31 picks; random; sticky), its down-instance policy
//! ([`note_error`](crate::ServiceProvider::note_error), 30 s, 2 errors) and
//! filters, and while its cache is not current it answers
//! [`Error::CacheNotCurrent`](crate::Error::CacheNotCurrent) rather than a
//! stale list.
//!
//! # Metrics
//!
//! With the crate's `metrics` feature, through the `metrics` facade (any
//! exporter): `zk_discovery_instances{base}` (a gauge of the instances this
//! process's discoveries of `base` have registered and not unregistered or
//! closed), `zk_discovery_registered{base, service, id}` (1 while the
//! instance's registration is `Registered`, else 0: it follows the
//! instance's node, as `zk_node_registered{path}` does),
//! `zk_service_instances{path}` and `zk_service_unreadable_instances{path}`
//! (the children a [`ServiceCache`](crate::ServiceCache) of service node
//! `path`, a provider's included, holds that read as instances, and those
//! whose JSON cannot be read), `zk_service_provider_offered{path}` (the
//! instances a [`ServiceProvider`](crate::ServiceProvider) of `path`
//! offered at its last look: the last of any provider of `path`) and `zk_service_provider_picks_total{path, outcome}` (its
//! `instance()` answers: `picked`, `none`, `not_current`).
//!
//! # What `registration(id)` means
//!
//! [`ServiceDiscovery::registration`](crate::ServiceDiscovery::registration) is the instance's node's
//! [`Registration`](crate::Registration) (see [the nodes' family page](crate::nodes)): `Registered` only
//! while the server has shown the node, owned by the current session for a
//! dynamic instance, on the current connection; `Uncertain` through a
//! disconnect and after a reconnect until the server has shown it again;
//! `Absent` after an expiry until it is created on the new session.
//!
//! # Names, ids and bad input
//!
//! An id is one node name (no `/`, not empty, not `.` or `..`). A name may
//! hold `/` (Curator allows it, Spring registers such names): a deeper tree,
//! whose first level alone [`query_for_names`](crate::ServiceDiscovery::query_for_names) lists; one leading `/` is
//! dropped (Curator's `ZKPaths.makePath`), an empty segment is refused.
//! Everything refused is a typed error: [`Error::InvalidInstance`](crate::Error::InvalidInstance) (a bad
//! name or id, no service type), [`Error::InstanceJson`](crate::Error::InstanceJson) (JSON Jackson rejects
//! too, naming where), [`Error::PayloadNotSerializable`](crate::Error::PayloadNotSerializable),
//! [`Error::PayloadMismatch`](crate::Error::PayloadMismatch).

pub(crate) mod cache;
pub(crate) mod instance;
mod json;
pub(crate) mod metrics;
pub(crate) mod payload;
pub(crate) mod provider;
pub(crate) mod service;
pub(crate) mod uri;
