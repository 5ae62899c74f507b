//! A service instance ([`ServiceInstance`], its builder, its
//! [`ServiceType`]) and its JSON, as Curator 5's `JsonInstanceSerializer`
//! writes and reads it ([`JsonMode`]).

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use zk_framework::CreateMode;

use crate::discovery::json::{object_members, write_str};
use crate::discovery::payload::Payload;
use std::collections::HashMap;

use crate::discovery::uri::{Endpoint, UriPart, UriSpec};
use crate::error::{Error, Result};

/// How an instance's node is kept (Curator's `ServiceType`, the JSON's
/// `serviceType`).
///
/// # Examples
///
/// ```
/// use zk_recipes::ServiceType;
/// assert_eq!(ServiceType::DynamicSequential.as_json_name(), "DYNAMIC_SEQUENTIAL");
/// assert!(ServiceType::Dynamic.is_dynamic() && !ServiceType::Permanent.is_dynamic());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ServiceType {
    /// An EPHEMERAL node: it goes with the session (and is registered again
    /// on the next). The default.
    #[default]
    Dynamic,
    /// An EPHEMERAL_SEQUENTIAL node (the node's name is not the id).
    DynamicSequential,
    /// A PERSISTENT node.
    Static,
    /// A PERSISTENT node (Curator makes no difference to `Static`).
    Permanent,
}

impl ServiceType {
    /// The JSON's name (`"DYNAMIC"`, `"DYNAMIC_SEQUENTIAL"`, `"STATIC"`,
    /// `"PERMANENT"`).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_recipes::ServiceType::Static.as_json_name(), "STATIC");
    /// ```
    pub fn as_json_name(self) -> &'static str {
        match self {
            ServiceType::Dynamic => "DYNAMIC",
            ServiceType::DynamicSequential => "DYNAMIC_SEQUENTIAL",
            ServiceType::Static => "STATIC",
            ServiceType::Permanent => "PERMANENT",
        }
    }

    /// The type a JSON name stands for (exactly, upper case, as Java's
    /// `Enum.valueOf`).
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::ServiceType;
    /// assert_eq!(ServiceType::from_json_name("PERMANENT"), Some(ServiceType::Permanent));
    /// assert_eq!(ServiceType::from_json_name("dynamic"), None);
    /// ```
    pub fn from_json_name(name: &str) -> Option<ServiceType> {
        [
            ServiceType::Dynamic,
            ServiceType::DynamicSequential,
            ServiceType::Static,
            ServiceType::Permanent,
        ]
        .into_iter()
        .find(|t| t.as_json_name() == name)
    }

    /// Whether the node is ephemeral (goes with the session).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_recipes::ServiceType::DynamicSequential.is_dynamic());
    /// ```
    pub fn is_dynamic(self) -> bool {
        matches!(self, ServiceType::Dynamic | ServiceType::DynamicSequential)
    }

    /// The node's create mode.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::CreateMode;
    /// assert_eq!(zk_recipes::ServiceType::Static.create_mode(), CreateMode::Persistent);
    /// ```
    pub fn create_mode(self) -> CreateMode {
        match self {
            ServiceType::Dynamic => CreateMode::Ephemeral,
            ServiceType::DynamicSequential => CreateMode::EphemeralSequential,
            ServiceType::Static | ServiceType::Permanent => CreateMode::Persistent,
        }
    }
}

/// Which JSON an instance is written as.
///
/// # Examples
///
/// ```
/// use zk_recipes::{JsonMode, ServiceInstance};
/// let i = ServiceInstance::builder("svc").id("a").registration_time_utc(0).enabled(false).build()?;
/// assert!(!i.to_json(JsonMode::Compatible).contains("enabled"));
/// assert!(i.to_json(JsonMode::Full).ends_with(",\"enabled\":false}"));
/// # Ok::<(), zk_recipes::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum JsonMode {
    /// What `new JsonInstanceSerializer(cls)` writes (Curator's default,
    /// Spring's and Dubbo's): no `enabled` key, so that Curator <= 2.11 /
    /// 3.2 readers (which fail on an unknown key) can read it. An instance
    /// with `enabled == false` is read back as enabled.
    #[default]
    Compatible,
    /// What `new JsonInstanceSerializer(cls, false)` writes: `enabled`
    /// last.
    Full,
}

/// A service instance: Curator's `ServiceInstance`, field for field, plus
/// the unknown fields its JSON carried (kept and written back in their
/// order, after the known ones, so that a field a newer writer added
/// survives our update).
///
/// # Examples
///
/// ```
/// use zk_recipes::{JsonMode, ServiceInstance, ServiceType, UriSpec};
/// let i = ServiceInstance::builder("svc")
///     .id("id-2")
///     .address("10.0.0.5")
///     .port(8080)
///     .ssl_port(8443)
///     .payload(zk_recipes::Payload::string("hello"))
///     .registration_time_utc(1700000000000)
///     .service_type(ServiceType::Static)
///     .uri_spec(UriSpec::parse("{scheme}://{address}")?)
///     .build()?;
/// assert_eq!(
///     i.to_json(JsonMode::Compatible),
///     r#"{"name":"svc","id":"id-2","address":"10.0.0.5","port":8080,"sslPort":8443,"payload":"hello","registrationTimeUTC":1700000000000,"serviceType":"STATIC","uriSpec":{"parts":[{"value":"scheme","variable":true},{"value":"://","variable":false},{"value":"address","variable":true}]}}"#
/// );
/// assert_eq!(ServiceInstance::from_json(i.to_json(JsonMode::Full).as_bytes())?, i);
/// # Ok::<(), zk_recipes::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceInstance {
    name: String,
    id: String,
    address: Option<String>,
    port: Option<i32>,
    ssl_port: Option<i32>,
    payload: Option<Payload>,
    registration_time_utc: i64,
    service_type: Option<ServiceType>,
    uri_spec: Option<UriSpec>,
    enabled: bool,
    unknown: Vec<(String, String)>,
}

impl ServiceInstance {
    /// A builder for an instance of service `name`: a random UUID as id,
    /// no address (Curator guesses the first non-loopback address; we
    /// leave it to the caller: a guess on a host with several interfaces
    /// is a wrong address more often than not), no ports, no payload, the
    /// registration time now, [`ServiceType::Dynamic`], no URI spec,
    /// enabled.
    ///
    /// # Examples
    ///
    /// ```
    /// let i = zk_recipes::ServiceInstance::builder("svc").build()?;
    /// assert_eq!(i.id().len(), 36);
    /// assert_eq!(i.address(), None);
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn builder(name: &str) -> ServiceInstanceBuilder {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        ServiceInstanceBuilder {
            i: ServiceInstance {
                name: name.to_string(),
                id: zk_framework::paths::new_protected_id(),
                address: None,
                port: None,
                ssl_port: None,
                payload: None,
                registration_time_utc: now,
                service_type: Some(ServiceType::Dynamic),
                uri_spec: None,
                enabled: true,
                unknown: Vec::new(),
            },
        }
    }

    /// A builder from this instance (every field, the unknown ones
    /// included): change some, build again, and `update` with it.
    ///
    /// # Examples
    ///
    /// ```
    /// let i = zk_recipes::ServiceInstance::builder("svc").port(1).build()?;
    /// let j = i.to_builder().port(2).build()?;
    /// assert_eq!((j.id(), j.port()), (i.id(), Some(2)));
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn to_builder(&self) -> ServiceInstanceBuilder {
        ServiceInstanceBuilder { i: self.clone() }
    }

    /// The service's name.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_recipes::ServiceInstance::builder("svc").build()?.name(), "svc");
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The instance's id.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_recipes::ServiceInstance::builder("svc").id("a").build()?.id(), "a");
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The address (a host name or an IP address), if any.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_recipes::ServiceInstance::builder("s").address("h").build()?.address(), Some("h"));
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn address(&self) -> Option<&str> {
        self.address.as_deref()
    }

    /// The plain port, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_recipes::ServiceInstance::builder("s").port(80).build()?.port(), Some(80));
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn port(&self) -> Option<i32> {
        self.port
    }

    /// The SSL port, if any (Druid writes `-1` for "no TLS": see
    /// [`endpoint`](Self::endpoint)).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_recipes::ServiceInstance::builder("s").ssl_port(-1).build()?.ssl_port(), Some(-1));
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn ssl_port(&self) -> Option<i32> {
        self.ssl_port
    }

    /// The payload, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_recipes::ServiceInstance::builder("s").build()?.payload().is_none());
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn payload(&self) -> Option<&Payload> {
        self.payload.as_ref()
    }

    /// The registration time, ms since the epoch (`registrationTimeUTC`).
    ///
    /// # Examples
    ///
    /// ```
    /// let i = zk_recipes::ServiceInstance::builder("s").registration_time_utc(5).build()?;
    /// assert_eq!(i.registration_time_utc(), 5);
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn registration_time_utc(&self) -> i64 {
        self.registration_time_utc
    }

    /// The service type; `None` only when read from JSON with
    /// `"serviceType":null` (such an instance cannot be registered).
    ///
    /// # Examples
    ///
    /// ```
    /// let i = zk_recipes::ServiceInstance::builder("s").build()?;
    /// assert_eq!(i.service_type(), Some(zk_recipes::ServiceType::Dynamic));
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn service_type(&self) -> Option<ServiceType> {
        self.service_type
    }

    /// The URI template, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_recipes::ServiceInstance::builder("s").build()?.uri_spec().is_none());
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn uri_spec(&self) -> Option<&UriSpec> {
        self.uri_spec.as_ref()
    }

    /// Whether the instance is enabled (a [`JsonMode::Compatible`] write
    /// drops a `false`: read back, it is enabled again).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_recipes::ServiceInstance::builder("s").build()?.enabled());
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The unknown fields the JSON carried, each as its key and its value's
    /// JSON text (byte for byte), in their order.
    ///
    /// # Examples
    ///
    /// ```
    /// let i = zk_recipes::ServiceInstance::from_json(br#"{"name":"s","id":"i","weight":3}"#)?;
    /// assert_eq!(i.unknown_fields(), &[("weight".to_string(), "3".to_string())]);
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn unknown_fields(&self) -> &[(String, String)] {
        &self.unknown
    }

    /// The URI from the instance's [`UriSpec`] (Curator's
    /// `buildUriSpec()`), `None` without one.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::{ServiceInstance, UriSpec};
    /// let i = ServiceInstance::builder("s").address("h").port(80)
    ///     .uri_spec(UriSpec::parse("{scheme}://{address}:{port}")?).build()?;
    /// assert_eq!(i.build_uri().as_deref(), Some("http://h:80"));
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn build_uri(&self) -> Option<String> {
        self.uri_spec.as_ref().map(|s| s.build(Some(self), &[]))
    }

    /// Where to reach the instance, trusting only ports `> 0`: `https` on
    /// the SSL port when it is one, else `http` on the plain port; `None`
    /// without an address or a usable port. (Druid writes `sslPort: -1`
    /// for "no TLS", which Curator's `{scheme}` renders as `https`.)
    ///
    /// # Examples
    ///
    /// ```
    /// let druid = zk_recipes::ServiceInstance::from_json(
    ///     br#"{"name":"druid:broker","id":"u","address":"h","port":8082,"sslPort":-1}"#,
    /// )?;
    /// assert_eq!(druid.endpoint().unwrap().to_string(), "http://h:8082");
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn endpoint(&self) -> Option<Endpoint> {
        endpoint(self)
    }

    /// The JSON Curator 5's `JsonInstanceSerializer` writes for this
    /// instance: compact, keys in its order (`name`, `id`, `address`,
    /// `port`, `sslPort`, `payload`, `registrationTimeUTC`, `serviceType`,
    /// `uriSpec`, then `enabled` in [`JsonMode::Full`]), nulls written,
    /// strings escaped as Jackson does; then the unknown fields kept from
    /// a read, as they were.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::{JsonMode, ServiceInstance, ServiceType};
    /// let i = ServiceInstance::builder("svc").id("id-1").address("10.0.0.5").port(8080)
    ///     .registration_time_utc(1700000000000).build()?;
    /// assert_eq!(
    ///     i.to_json(JsonMode::Compatible),
    ///     r#"{"name":"svc","id":"id-1","address":"10.0.0.5","port":8080,"sslPort":null,"payload":null,"registrationTimeUTC":1700000000000,"serviceType":"DYNAMIC","uriSpec":null}"#
    /// );
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn to_json(&self, mode: JsonMode) -> String {
        let mut o = String::with_capacity(256);
        let opt_str = |o: &mut String, v: &Option<String>| match v {
            Some(s) => write_str(o, s),
            None => o.push_str("null"),
        };
        let opt_int = |o: &mut String, v: Option<i32>| match v {
            Some(n) => {
                let _ = write!(o, "{n}");
            }
            None => o.push_str("null"),
        };
        o.push_str("{\"name\":");
        write_str(&mut o, &self.name);
        o.push_str(",\"id\":");
        write_str(&mut o, &self.id);
        o.push_str(",\"address\":");
        opt_str(&mut o, &self.address);
        o.push_str(",\"port\":");
        opt_int(&mut o, self.port);
        o.push_str(",\"sslPort\":");
        opt_int(&mut o, self.ssl_port);
        o.push_str(",\"payload\":");
        match &self.payload {
            Some(p) => o.push_str(p.as_json()),
            None => o.push_str("null"),
        }
        let _ = write!(o, ",\"registrationTimeUTC\":{}", self.registration_time_utc);
        o.push_str(",\"serviceType\":");
        match self.service_type {
            Some(t) => write_str(&mut o, t.as_json_name()),
            None => o.push_str("null"),
        }
        o.push_str(",\"uriSpec\":");
        match &self.uri_spec {
            Some(spec) => {
                o.push_str("{\"parts\":[");
                for (i, p) in spec.parts().iter().enumerate() {
                    if i > 0 {
                        o.push(',');
                    }
                    o.push_str("{\"value\":");
                    write_str(&mut o, p.value());
                    let _ = write!(o, ",\"variable\":{}}}", p.is_variable());
                }
                o.push_str("]}");
            }
            None => o.push_str("null"),
        }
        if mode == JsonMode::Full {
            let _ = write!(o, ",\"enabled\":{}", self.enabled);
        }
        for (k, v) in &self.unknown {
            o.push(',');
            write_str(&mut o, k);
            o.push(':');
            o.push_str(v);
        }
        o.push('}');
        o
    }

    /// Reads an instance as Curator 5's `JsonInstanceSerializer` does
    /// (Jackson, unknown keys allowed), leniently:
    ///
    /// * key order is free; a key given twice: the last wins; a leading BOM
    ///   and anything after the object are ignored;
    /// * a missing key takes Java's default: `name`/`id` empty,
    ///   `address`/`port`/`sslPort`/`payload`/`uriSpec` none,
    ///   `registrationTimeUTC` 0, `serviceType` DYNAMIC, `enabled` true
    ///   (`{}` is an instance);
    /// * `null`: `name`/`id` read as empty (Java keeps a null; such an
    ///   instance cannot be registered by either), `registrationTimeUTC`
    ///   as 0, `serviceType` as `None`, **`enabled` as false** (Java's
    ///   primitive default);
    /// * coercions Jackson makes: `"80"` and `80.5` as port 80, `"12"` and
    ///   `1.7e12` as a time, `"false"` as a boolean, a number or boolean as
    ///   an address or a name (its text);
    /// * unknown keys at the top level are kept ([`unknown_fields`]) and
    ///   written back; unknown keys inside `uriSpec` are dropped;
    /// * the payload is kept as its JSON text (class tag and all).
    ///
    /// [`unknown_fields`]: Self::unknown_fields
    ///
    /// # Errors
    ///
    /// [`Error::InstanceJson`] naming where (`$`, `$.port`,
    /// `$.uriSpec.parts[0].variable`, ...) for what Jackson rejects too:
    /// bytes that are not UTF-8, empty input, `null`, an array or anything
    /// but an object at the top, bad JSON (comments, single quotes), an
    /// unknown or lower-case `serviceType`, a field of a type that does not
    /// coerce, a number out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::{Error, ServiceInstance, ServiceType};
    /// let i = ServiceInstance::from_json(br#"{"port":"80","enabled":null,"x":[1]}"#)?;
    /// assert_eq!((i.name(), i.port(), i.enabled()), ("", Some(80), false));
    /// assert_eq!(i.service_type(), Some(ServiceType::Dynamic));
    /// match ServiceInstance::from_json(br#"{"serviceType":"dynamic"}"#) {
    ///     Err(Error::InstanceJson { at, .. }) => assert_eq!(at, "$.serviceType"),
    ///     other => panic!("{other:?}"),
    /// }
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn from_json(bytes: &[u8]) -> Result<ServiceInstance> {
        read(bytes).map_err(|(at, reason)| Error::InstanceJson {
            node: String::new(),
            at,
            reason,
        })
    }
}

impl UriSpec {
    /// The URI, as Curator's `build(instance, variables)`: `[` and `]` give
    /// `{` and `}`, `scheme` is `http`; with an instance, `name`, `id`,
    /// `address`, `port`, `ssl-port`, `registration-time-utc` and
    /// `service-type` (lower case) come from it (a missing one is empty),
    /// and `scheme` is `https` when it has an `ssl_port` (any, even `-1`);
    /// `variables` override all. An unknown variable renders as nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::{ServiceInstance, ServiceType, UriSpec};
    /// let i = ServiceInstance::builder("druid:broker").address("h").port(8082).ssl_port(-1)
    ///     .service_type(ServiceType::DynamicSequential).build()?;
    /// let s = UriSpec::parse("{scheme}://{address}:{port} {service-type}")?;
    /// assert_eq!(s.build(Some(&i), &[]), "https://h:8082 dynamic_sequential"); // Curator's trap
    /// assert_eq!(s.build(Some(&i), &[("scheme", "http")]), "http://h:8082 dynamic_sequential");
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn build(&self, instance: Option<&ServiceInstance>, variables: &[(&str, &str)]) -> String {
        let mut vars: HashMap<&str, String> = HashMap::new();
        vars.insert("]", "}".into());
        vars.insert("[", "{".into());
        vars.insert("scheme", "http".into());
        if let Some(i) = instance {
            let num = |n: Option<i32>| n.map(|n| n.to_string()).unwrap_or_default();
            vars.insert("name", i.name().to_string());
            vars.insert("id", i.id().to_string());
            vars.insert("address", i.address().unwrap_or("").to_string());
            vars.insert("port", num(i.port()));
            vars.insert("ssl-port", num(i.ssl_port()));
            vars.insert("registration-time-utc", i.registration_time_utc().to_string());
            vars.insert(
                "service-type",
                i.service_type()
                    .map(|t| t.as_json_name().to_lowercase())
                    .unwrap_or_default(),
            );
            if i.ssl_port().is_some() {
                vars.insert("scheme", "https".into());
            }
        }
        for (k, v) in variables {
            vars.insert(*k, (*v).to_string());
        }
        self.render(&vars)
    }
}

fn endpoint(i: &ServiceInstance) -> Option<Endpoint> {
    let address = i.address()?.to_string();
    let usable = |p: Option<i32>| p.filter(|p| *p > 0).and_then(|p| u16::try_from(p).ok());
    if let Some(port) = usable(i.ssl_port()) {
        return Some(Endpoint {
            scheme: "https",
            address,
            port,
        });
    }
    usable(i.port()).map(|port| Endpoint {
        scheme: "http",
        address,
        port,
    })
}

type Fail = (String, String);

fn fail(at: &str, reason: impl Into<String>) -> Fail {
    (at.to_string(), reason.into())
}

fn read(bytes: &[u8]) -> std::result::Result<ServiceInstance, Fail> {
    let text = std::str::from_utf8(bytes).map_err(|e| fail("$", format!("not UTF-8: {e}")))?;
    let members = object_members(text).map_err(|e| fail("$", format!("{} (at byte {})", e.reason, e.offset)))?;
    let mut i = ServiceInstance {
        name: String::new(),
        id: String::new(),
        address: None,
        port: None,
        ssl_port: None,
        payload: None,
        registration_time_utc: 0,
        service_type: Some(ServiceType::Dynamic),
        uri_spec: None,
        enabled: true,
        unknown: Vec::new(),
    };
    for (key, raw) in members {
        let at = format!("$.{key}");
        let value = || -> std::result::Result<serde_json::Value, Fail> {
            serde_json::from_str(raw).map_err(|e| fail(&at, e.to_string()))
        };
        match key.as_str() {
            "name" => i.name = text_of(raw, &value()?, &at)?.unwrap_or_default(),
            "id" => i.id = text_of(raw, &value()?, &at)?.unwrap_or_default(),
            "address" => i.address = text_of(raw, &value()?, &at)?,
            "port" => i.port = int_of(&value()?, &at)?,
            "sslPort" => i.ssl_port = int_of(&value()?, &at)?,
            "payload" => {
                i.payload = if raw == "null" {
                    None
                } else {
                    Some(Payload::from_json(raw).map_err(|e| fail(&at, e.to_string()))?)
                }
            }
            "registrationTimeUTC" => i.registration_time_utc = long_of(&value()?, &at)?,
            "serviceType" => {
                i.service_type = match value()? {
                    serde_json::Value::Null => None,
                    serde_json::Value::String(s) => Some(
                        ServiceType::from_json_name(&s)
                            .ok_or_else(|| fail(&at, format!("{s:?} is not a ServiceType")))?,
                    ),
                    other => return Err(fail(&at, format!("a ServiceType name, not {other}"))),
                }
            }
            "uriSpec" => i.uri_spec = uri_spec_of(&value()?)?,
            "enabled" => i.enabled = bool_of(&value()?, &at)?,
            _ => {
                i.unknown.retain(|(k, _)| *k != key);
                i.unknown.push((key, raw.to_string()));
            }
        }
    }
    Ok(i)
}

/// A string field: a string, or the text of a number or a boolean; `None`
/// for null.
fn text_of(raw: &str, v: &serde_json::Value, at: &str) -> std::result::Result<Option<String>, Fail> {
    match v {
        serde_json::Value::Null => Ok(None),
        serde_json::Value::String(s) => Ok(Some(s.clone())),
        serde_json::Value::Number(_) | serde_json::Value::Bool(_) => Ok(Some(raw.trim().to_string())),
        other => Err(fail(at, format!("a string, not {}", kind(other)))),
    }
}

fn kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// A whole number from a JSON number (a fraction truncated) or its text.
fn whole(v: &serde_json::Value, at: &str) -> std::result::Result<Option<i64>, Fail> {
    match v {
        serde_json::Value::Null => Ok(None),
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ok(Some(i))
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                if f.is_finite() && f.trunc() >= i64::MIN as f64 && f.trunc() < i64::MAX as f64 {
                    // A fraction is truncated, as Jackson's coercion does.
                    Ok(Some(f.trunc() as i64))
                } else {
                    Err(fail(at, format!("{n} is out of range")))
                }
            }
        }
        serde_json::Value::String(s) if s.trim().is_empty() => Ok(None),
        serde_json::Value::String(s) => match s.trim().parse::<i64>() {
            Ok(i) => Ok(Some(i)),
            Err(_) => match s.trim().parse::<f64>() {
                Ok(f) if f.is_finite() => whole(&serde_json::json!(f), at),
                _ => Err(fail(at, format!("{s:?} is not a number"))),
            },
        },
        other => Err(fail(at, format!("a number, not {}", kind(other)))),
    }
}

fn int_of(v: &serde_json::Value, at: &str) -> std::result::Result<Option<i32>, Fail> {
    match whole(v, at)? {
        None => Ok(None),
        Some(n) => i32::try_from(n)
            .map(Some)
            .map_err(|_| fail(at, format!("{n} is out of an int's range"))),
    }
}

fn long_of(v: &serde_json::Value, at: &str) -> std::result::Result<i64, Fail> {
    Ok(whole(v, at)?.unwrap_or(0))
}

fn bool_of(v: &serde_json::Value, at: &str) -> std::result::Result<bool, Fail> {
    match v {
        serde_json::Value::Null => Ok(false),
        serde_json::Value::Bool(b) => Ok(*b),
        serde_json::Value::String(s) if s == "true" => Ok(true),
        serde_json::Value::String(s) if s == "false" || s.is_empty() => Ok(false),
        serde_json::Value::Number(n) if n.as_i64() == Some(0) => Ok(false),
        serde_json::Value::Number(n) if n.as_i64() == Some(1) => Ok(true),
        other => Err(fail(at, format!("a boolean, not {other}"))),
    }
}

fn uri_spec_of(v: &serde_json::Value) -> std::result::Result<Option<UriSpec>, Fail> {
    let at = "$.uriSpec";
    let m = match v {
        serde_json::Value::Null => return Ok(None),
        serde_json::Value::Object(m) => m,
        other => return Err(fail(at, format!("an object, not {}", kind(other)))),
    };
    let parts = match m.get("parts") {
        None | Some(serde_json::Value::Null) => Vec::new(),
        Some(serde_json::Value::Array(a)) => a.clone(),
        Some(other) => return Err(fail("$.uriSpec.parts", format!("an array, not {}", kind(other)))),
    };
    let mut out = Vec::with_capacity(parts.len());
    for (n, p) in parts.iter().enumerate() {
        let here = format!("$.uriSpec.parts[{n}]");
        let serde_json::Value::Object(pm) = p else {
            return Err(fail(&here, format!("an object, not {}", kind(p))));
        };
        let value = match pm.get("value") {
            None | Some(serde_json::Value::Null) => String::new(),
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(v @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_))) => v.to_string(),
            Some(other) => return Err(fail(&format!("{here}.value"), format!("a string, not {}", kind(other)))),
        };
        let variable = match pm.get("variable") {
            None => false,
            Some(v) => bool_of(v, &format!("{here}.variable"))?,
        };
        out.push(if variable {
            UriPart::variable(&value)
        } else {
            UriPart::literal(&value)
        });
    }
    Ok(Some(UriSpec::from_parts(out)))
}

/// One child of a service's node as [`ServiceDiscovery::query_for_instances`](crate::ServiceDiscovery::query_for_instances)
/// read it: the instance, or why it could not be read (one bad child does
/// not fail the whole query, where Curator's throws).
///
/// # Examples
///
/// ```
/// use zk_recipes::{InstanceRead, ServiceInstance};
/// let r = InstanceRead { node: "a".into(), instance: ServiceInstance::from_json(b"{}") };
/// assert!(r.instance.is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceRead {
    /// The child's node name (the instance id, except for a
    /// [`DynamicSequential`](ServiceType::DynamicSequential) instance).
    pub node: String,
    /// The instance, or [`Error::InstanceJson`] naming the node and where
    /// its JSON is wrong.
    pub instance: Result<ServiceInstance>,
}

/// Builds a [`ServiceInstance`]: [`ServiceInstance::builder`].
///
/// # Examples
///
/// ```
/// let i = zk_recipes::ServiceInstance::builder("svc").id("a").port(80).build()?;
/// assert_eq!(i.id(), "a");
/// # Ok::<(), zk_recipes::Error>(())
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until build()"]
pub struct ServiceInstanceBuilder {
    i: ServiceInstance,
}

impl ServiceInstanceBuilder {
    /// The service's name (see [`build`](Self::build) for what a name may
    /// be).
    ///
    /// # Examples
    ///
    /// ```
    /// let i = zk_recipes::ServiceInstance::builder("a").name("b").build()?;
    /// assert_eq!(i.name(), "b");
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn name(mut self, name: &str) -> Self {
        self.i.name = name.to_string();
        self
    }

    /// The id (default: a random UUID).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_recipes::ServiceInstance::builder("s").id("host:80").build()?.id(), "host:80");
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn id(mut self, id: &str) -> Self {
        self.i.id = id.to_string();
        self
    }

    /// The address (default: none; Curator's default, the first
    /// non-loopback IP address, is not guessed here).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_recipes::ServiceInstance::builder("s").address("h").build()?.address(), Some("h"));
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn address(mut self, address: &str) -> Self {
        self.i.address = Some(address.to_string());
        self
    }

    /// The plain port.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_recipes::ServiceInstance::builder("s").port(1).build()?.port(), Some(1));
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn port(mut self, port: i32) -> Self {
        self.i.port = Some(port);
        self
    }

    /// The SSL port.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_recipes::ServiceInstance::builder("s").ssl_port(2).build()?.ssl_port(), Some(2));
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn ssl_port(mut self, port: i32) -> Self {
        self.i.ssl_port = Some(port);
        self
    }

    /// The payload.
    ///
    /// # Examples
    ///
    /// ```
    /// let i = zk_recipes::ServiceInstance::builder("s").payload(zk_recipes::Payload::int(1)).build()?;
    /// assert_eq!(i.payload().unwrap().as_json(), "1");
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn payload(mut self, payload: Payload) -> Self {
        self.i.payload = Some(payload);
        self
    }

    /// The registration time, ms since the epoch (default: when
    /// [`ServiceInstance::builder`] was called).
    ///
    /// # Examples
    ///
    /// ```
    /// let i = zk_recipes::ServiceInstance::builder("s").registration_time_utc(0).build()?;
    /// assert_eq!(i.registration_time_utc(), 0);
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn registration_time_utc(mut self, ms: i64) -> Self {
        self.i.registration_time_utc = ms;
        self
    }

    /// The service type (default [`ServiceType::Dynamic`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::ServiceType;
    /// let i = zk_recipes::ServiceInstance::builder("s").service_type(ServiceType::Static).build()?;
    /// assert_eq!(i.service_type(), Some(ServiceType::Static));
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn service_type(mut self, t: ServiceType) -> Self {
        self.i.service_type = Some(t);
        self
    }

    /// The URI template.
    ///
    /// # Examples
    ///
    /// ```
    /// let spec = zk_recipes::UriSpec::parse("{address}")?;
    /// assert!(zk_recipes::ServiceInstance::builder("s").uri_spec(spec).build()?.uri_spec().is_some());
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn uri_spec(mut self, spec: UriSpec) -> Self {
        self.i.uri_spec = Some(spec);
        self
    }

    /// Whether the instance is enabled (default true; written only in
    /// [`JsonMode::Full`]).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!zk_recipes::ServiceInstance::builder("s").enabled(false).build()?.enabled());
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.i.enabled = enabled;
        self
    }

    /// The instance.
    ///
    /// A name is one node name, or several joined by `/` (Curator allows
    /// that: Spring registers names such as `a/b/anotherservice`, a deeper
    /// tree whose first level alone is what `query_for_names` lists); one
    /// leading `/` is dropped, as Curator's `ZKPaths.makePath` does.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInstance`] for an empty name (or `/`), a name with
    /// an empty, `.` or `..` segment or a trailing `/`, an empty id, an id
    /// with a `/` or that is `.` or `..`, or a `NUL` in either.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::ServiceInstance;
    /// assert!(ServiceInstance::builder("").build().is_err());
    /// assert!(ServiceInstance::builder("svc").id("a/b").build().is_err());
    /// assert!(ServiceInstance::builder("svc").id("").build().is_err());
    /// assert!(ServiceInstance::builder("a/b/svc").build().is_ok());
    /// ```
    pub fn build(self) -> Result<ServiceInstance> {
        check_identity(&self.i.name, &self.i.id)?;
        Ok(self.i)
    }
}

/// A name and an id that make a path `<base>/<name>/<id>`.
pub(crate) fn check_identity(name: &str, id: &str) -> Result<()> {
    let bad = |reason: String| Error::InvalidInstance {
        name: name.to_string(),
        id: id.to_string(),
        reason,
    };
    let rel = name.strip_prefix('/').unwrap_or(name);
    if rel.is_empty() {
        return Err(bad("an instance needs a service name".into()));
    }
    if rel.split('/').any(|seg| seg.is_empty() || seg == "." || seg == "..") {
        return Err(bad(format!(
            "the service name {name:?} has an empty, \".\" or \"..\" segment (or a trailing /)"
        )));
    }
    if id.is_empty() {
        return Err(bad("an instance needs an id".into()));
    }
    if id.contains('/') || id == "." || id == ".." {
        return Err(bad(format!("the id {id:?} must be one node name (no /, not . or ..)")));
    }
    if name.contains('\0') || id.contains('\0') {
        return Err(bad("a name or id with a NUL character".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spec's vectors (§2.1, §2.4), byte for byte.
    #[test]
    fn the_writer_matches_curators_vectors() {
        let i = ServiceInstance::builder("svc")
            .id("id-2")
            .address("10.0.0.5")
            .port(8080)
            .ssl_port(8443)
            .payload(Payload::string("hello"))
            .registration_time_utc(1_700_000_000_000)
            .service_type(ServiceType::Static)
            .uri_spec(UriSpec::parse("{scheme}://{address}").unwrap())
            .enabled(false)
            .build()
            .unwrap();
        let compat = r#"{"name":"svc","id":"id-2","address":"10.0.0.5","port":8080,"sslPort":8443,"payload":"hello","registrationTimeUTC":1700000000000,"serviceType":"STATIC","uriSpec":{"parts":[{"value":"scheme","variable":true},{"value":"://","variable":false},{"value":"address","variable":true}]}}"#;
        assert_eq!(i.to_json(JsonMode::Compatible), compat);
        let full = format!("{},\"enabled\":false}}", &compat[..compat.len() - 1]);
        assert_eq!(i.to_json(JsonMode::Full), full);
        // Compatible mode drops `enabled: false` (Curator's own test asserts it).
        assert!(ServiceInstance::from_json(compat.as_bytes()).unwrap().enabled());
        assert!(!ServiceInstance::from_json(full.as_bytes()).unwrap().enabled());

        let void = ServiceInstance::builder("svc")
            .id("id-1")
            .address("10.0.0.5")
            .port(8080)
            .registration_time_utc(1_700_000_000_000)
            .build()
            .unwrap();
        assert_eq!(
            void.to_json(JsonMode::Compatible),
            r#"{"name":"svc","id":"id-1","address":"10.0.0.5","port":8080,"sslPort":null,"payload":null,"registrationTimeUTC":1700000000000,"serviceType":"DYNAMIC","uriSpec":null}"#
        );
        let all_null = r#"{"name":"s","id":"i","address":null,"port":null,"sslPort":null,"payload":null,"registrationTimeUTC":0,"serviceType":null,"uriSpec":null}"#;
        let read = ServiceInstance::from_json(all_null.as_bytes()).unwrap();
        assert_eq!(read.service_type(), None);
        assert_eq!(read.to_json(JsonMode::Compatible), all_null);
    }

    #[test]
    fn strings_are_escaped_as_jackson_writes_them() {
        let i = ServiceInstance::builder("s\"\\/\n\u{1}é\u{2028}")
            .id("i")
            .registration_time_utc(0)
            .build()
            .unwrap();
        let j = i.to_json(JsonMode::Compatible);
        assert!(
            j.starts_with("{\"name\":\"s\\\"\\\\/\\n\\u0001é\u{2028}\",\"id\":\"i\""),
            "{j}"
        );
        assert_eq!(ServiceInstance::from_json(j.as_bytes()).unwrap(), i);
    }

    #[test]
    fn payload_tags_survive_byte_for_byte() {
        for p in [
            r#"["java.lang.Long",42]"#,
            r#"["java.util.Arrays$ArrayList",["a","b"]]"#,
            r#"{"@class":"java.util.LinkedHashMap","k":"v","n":1}"#,
            r#"{"z":1.50,"@class":"com.example.Details","description":"d","weight":3}"#,
            r#"12345678901234"#,
            r#"1.5e3"#,
        ] {
            let json = format!(
                r#"{{"name":"s","id":"i","address":null,"port":null,"sslPort":null,"payload":{p},"registrationTimeUTC":0,"serviceType":"DYNAMIC","uriSpec":null}}"#
            );
            let i = ServiceInstance::from_json(json.as_bytes()).unwrap();
            assert_eq!(i.payload().unwrap().as_json(), p);
            assert_eq!(i.to_json(JsonMode::Compatible), json);
        }
    }

    #[test]
    fn the_reader_is_as_lenient_as_jackson() {
        let i = ServiceInstance::from_json(b"{}").unwrap();
        assert_eq!((i.name(), i.id(), i.registration_time_utc()), ("", "", 0));
        assert_eq!(i.service_type(), Some(ServiceType::Dynamic));
        assert!(i.enabled());
        let i = ServiceInstance::from_json(
            "\u{feff}{\"port\":80.5,\"sslPort\":\"443\",\"registrationTimeUTC\":1.7e12,\"enabled\":\"false\",\"address\":12,\"name\":\"a\",\"name\":\"b\"} junk"
                .as_bytes(),
        )
        .unwrap();
        assert_eq!(i.port(), Some(80));
        assert_eq!(i.ssl_port(), Some(443));
        assert_eq!(i.registration_time_utc(), 1_700_000_000_000);
        assert!(!i.enabled());
        assert_eq!(i.address(), Some("12"));
        assert_eq!(i.name(), "b", "the last of a key given twice");
        assert!(!ServiceInstance::from_json(br#"{"enabled":null}"#).unwrap().enabled());
        let i = ServiceInstance::from_json(
            br#"{"registrationTimeUTC":"12","uriSpec":{"parts":[{"value":"a","variable":true,"x":1}],"y":2}}"#,
        )
        .unwrap();
        assert_eq!(i.registration_time_utc(), 12);
        assert_eq!(i.uri_spec().unwrap().parts(), &[UriPart::variable("a")]);
    }

    #[test]
    fn unknown_fields_are_kept_in_order_and_written_back() {
        let json = br#"{"name":"s","id":"i","zone":{"b":1,"a":[2]},"address":"h","weight":3.0}"#;
        let i = ServiceInstance::from_json(json).unwrap();
        assert_eq!(
            i.unknown_fields(),
            &[
                ("zone".to_string(), r#"{"b":1,"a":[2]}"#.to_string()),
                ("weight".to_string(), "3.0".to_string())
            ]
        );
        let out = i.to_json(JsonMode::Compatible);
        assert!(
            out.ends_with(r#""uriSpec":null,"zone":{"b":1,"a":[2]},"weight":3.0}"#),
            "{out}"
        );
        let j = i.to_builder().port(9).build().unwrap().to_json(JsonMode::Full);
        assert!(
            j.ends_with(r#""enabled":true,"zone":{"b":1,"a":[2]},"weight":3.0}"#),
            "{j}"
        );
    }

    #[test]
    fn rejected_inputs_name_where() {
        let at = |json: &[u8]| match ServiceInstance::from_json(json) {
            Err(Error::InstanceJson { at, .. }) => at,
            other => panic!("{other:?}"),
        };
        assert_eq!(at(b""), "$");
        assert_eq!(at(b"null"), "$");
        assert_eq!(at(b"[{}]"), "$");
        assert_eq!(at(b"{'a':1}"), "$");
        assert_eq!(at(b"\xff"), "$");
        assert_eq!(at(br#"{"serviceType":"dynamic"}"#), "$.serviceType");
        assert_eq!(at(br#"{"port":"eighty"}"#), "$.port");
        assert_eq!(at(br#"{"port":3000000000}"#), "$.port");
        assert_eq!(at(br#"{"port":[1]}"#), "$.port");
        assert_eq!(at(br#"{"name":{}}"#), "$.name");
        assert_eq!(at(br#"{"enabled":"yes"}"#), "$.enabled");
        assert_eq!(at(br#"{"uriSpec":{"parts":[1]}}"#), "$.uriSpec.parts[0]");
        assert_eq!(
            at(br#"{"uriSpec":{"parts":[{"variable":"x"}]}}"#),
            "$.uriSpec.parts[0].variable"
        );
    }

    #[test]
    fn names_and_ids_are_checked() {
        for (name, id, ok) in [
            ("svc", "a", true),
            ("a/b/svc", "a", true),
            ("/a/b/svc", "a", true),
            ("", "a", false),
            ("/", "a", false),
            ("a//b", "a", false),
            ("a/", "a", false),
            ("a/../b", "a", false),
            ("svc", "", false),
            ("svc", "a/b", false),
            ("svc", "..", false),
            ("svc", "a\0", false),
        ] {
            assert_eq!(check_identity(name, id).is_ok(), ok, "{name:?} {id:?}");
        }
    }
}
