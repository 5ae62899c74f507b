//! Service discovery, wire-compatible with Curator 5's `curator-x-discovery`:
//! the model. A [`ServiceInstance`](crate::ServiceInstance) (built by
//! [`ServiceInstanceBuilder`](crate::ServiceInstanceBuilder), with a
//! [`ServiceType`](crate::ServiceType)) is written as the JSON Curator 5's
//! `JsonInstanceSerializer` writes ([`JsonMode`](crate::JsonMode)), byte for
//! byte, and read as leniently as Jackson reads it; its
//! [`Payload`](crate::Payload) keeps Jackson's class tag byte for byte; its
//! [`UriSpec`](crate::UriSpec) is Curator's template.

pub(crate) mod instance;
mod json;
pub(crate) mod payload;
pub(crate) mod uri;
