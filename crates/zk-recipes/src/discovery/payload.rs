//! A service instance's payload: opaque JSON that keeps Jackson's class tag
//! byte for byte ([`Payload`]), typed helpers for a serde type under a class
//! tag the caller names, and the `ZookeeperInstance` shape Spring Cloud
//! Zookeeper and Apache Dubbo register ([`ZookeeperInstance`]).

use std::collections::BTreeMap;

use serde_core::de::DeserializeOwned;
use serde_core::Serialize;

use crate::discovery::json::{check_value, quoted, write_str};
use crate::error::{Error, Result};

/// The class tag Jackson gives a Java `Long` (written as the wrapper array
/// `["java.lang.Long",5]`).
pub const JAVA_LONG: &str = "java.lang.Long";
/// The class tag Jackson gives a Java `LinkedHashMap` (written as
/// `{"@class":"java.util.LinkedHashMap",...}`).
pub const JAVA_LINKED_HASH_MAP: &str = "java.util.LinkedHashMap";

/// A service instance's `payload`, as opaque JSON text kept byte for byte:
/// read from a node and written back, it is the same bytes (Jackson's
/// class tag included: `"@class"` inside an object, the wrapper array
/// `["java.lang.Long",5]` of a non-natural scalar).
///
/// A Java reader deserializes the payload into its `payloadClass` and
/// fails the WHOLE instance when the tag names another class or one it
/// lacks (Spring's and Dubbo's `ZookeeperInstance` have the same fields
/// but cannot read each other's; Druid's `ServiceDiscovery<Void>` reads
/// only instances without a payload). So write the tag the Java readers of
/// your registry expect: [`Payload::typed`] with their class, or
/// [`ZookeeperInstance::to_payload`] with Spring's or Dubbo's.
///
/// # Examples
///
/// ```
/// use zk_recipes::Payload;
/// let p = Payload::long(5);
/// assert_eq!(p.as_json(), r#"["java.lang.Long",5]"#);
/// assert_eq!(p.class().as_deref(), Some("java.lang.Long"));
/// let kept = Payload::from_json(r#"{"@class":"com.example.Details","b":1.50,"a":2}"#)?;
/// assert_eq!(kept.as_json(), r#"{"@class":"com.example.Details","b":1.50,"a":2}"#);
/// # Ok::<(), zk_recipes::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Payload {
    raw: String,
}

impl Payload {
    /// A payload from its JSON text, kept as given (outer whitespace
    /// trimmed). JSON `null` is no payload: use `None` for it.
    ///
    /// # Errors
    ///
    /// [`Error::InstanceJson`] (at `$.payload`) when `json` is not one JSON
    /// value, or is `null`.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::Payload;
    /// assert!(Payload::from_json(r#"{"@class":"java.util.LinkedHashMap","k":"v"}"#).is_ok());
    /// assert!(Payload::from_json("{oops").is_err());
    /// assert!(Payload::from_json("null").is_err());
    /// ```
    pub fn from_json(json: &str) -> Result<Payload> {
        let raw = json.trim_matches([' ', '\t', '\n', '\r']);
        check_value(raw).map_err(|e| Error::InstanceJson {
            node: String::new(),
            at: "$.payload".into(),
            reason: format!("{} (at byte {})", e.reason, e.offset),
        })?;
        if raw == "null" {
            return Err(Error::InstanceJson {
                node: String::new(),
                at: "$.payload".into(),
                reason: "null is no payload (use None)".into(),
            });
        }
        Ok(Payload { raw: raw.to_string() })
    }

    /// The payload's JSON text, as it is written.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_recipes::Payload::string("hi").as_json(), "\"hi\"");
    /// ```
    pub fn as_json(&self) -> &str {
        &self.raw
    }

    /// The payload as a `serde_json::Value` (an object's key order and a
    /// number's spelling are not kept there: [`as_json`](Self::as_json) has
    /// them).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_recipes::Payload::boolean(true).value(), serde_json::Value::Bool(true));
    /// ```
    pub fn value(&self) -> serde_json::Value {
        // Checked JSON at construction; a number serde_json cannot hold is
        // the one way this could fail.
        serde_json::from_str(&self.raw).unwrap_or(serde_json::Value::Null)
    }

    /// Jackson's class tag: an object's `"@class"` member, or the first
    /// element of a wrapper array (`["java.lang.Long",5]`); `None` for a
    /// natural value (a string, a boolean, a number Jackson writes bare) or
    /// an object without `"@class"` (which Java reads as a `LinkedHashMap`).
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::Payload;
    /// assert_eq!(Payload::from_json(r#"{"a":1,"@class":"x.Y"}"#)?.class().as_deref(), Some("x.Y"));
    /// assert_eq!(Payload::string("s").class(), None);
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn class(&self) -> Option<String> {
        match self.value() {
            serde_json::Value::Object(m) => m.get("@class").and_then(|c| c.as_str()).map(str::to_string),
            serde_json::Value::Array(a) if a.len() == 2 => a[0].as_str().map(str::to_string),
            _ => None,
        }
    }

    /// A string payload (natural: written bare, read by a Java `String` or
    /// `Object` payload class).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_recipes::Payload::string("a\"b").as_json(), r#""a\"b""#);
    /// ```
    pub fn string(s: &str) -> Payload {
        Payload { raw: quoted(s) }
    }

    /// A boolean payload (natural).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_recipes::Payload::boolean(false).as_json(), "false");
    /// ```
    pub fn boolean(b: bool) -> Payload {
        Payload { raw: b.to_string() }
    }

    /// An `Integer` payload (natural: written bare).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_recipes::Payload::int(42).as_json(), "42");
    /// ```
    pub fn int(i: i32) -> Payload {
        Payload { raw: i.to_string() }
    }

    /// A `Long` payload, in Jackson's wrapper array `["java.lang.Long",n]`
    /// (a bare number is read back by Java as an `Integer` when it fits).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_recipes::Payload::long(12345678901234).as_json(), r#"["java.lang.Long",12345678901234]"#);
    /// ```
    pub fn long(n: i64) -> Payload {
        Payload {
            raw: format!("[{},{n}]", quoted(JAVA_LONG)),
        }
    }

    /// A `Map<String,String>` payload as Jackson writes a `LinkedHashMap`:
    /// `{"@class":"java.util.LinkedHashMap","k":"v",...}`, in the order
    /// given.
    ///
    /// # Examples
    ///
    /// ```
    /// let p = zk_recipes::Payload::string_map([("zone", "a"), ("weight", "3")]);
    /// assert_eq!(p.as_json(), r#"{"@class":"java.util.LinkedHashMap","zone":"a","weight":"3"}"#);
    /// ```
    pub fn string_map<'a>(entries: impl IntoIterator<Item = (&'a str, &'a str)>) -> Payload {
        let mut raw = String::from("{");
        write_str(&mut raw, "@class");
        raw.push(':');
        write_str(&mut raw, JAVA_LINKED_HASH_MAP);
        for (k, v) in entries {
            raw.push(',');
            write_str(&mut raw, k);
            raw.push(':');
            write_str(&mut raw, v);
        }
        raw.push('}');
        Payload { raw }
    }

    /// `value` (any `serde` type) tagged as Java class `class`: an object
    /// gets `"@class"` as its first member, in front of the fields in the
    /// order `value` serializes them (Jackson's `@JsonTypeInfo(use=CLASS)`
    /// for a POJO); anything else is wrapped as `["<class>",<value>]`.
    ///
    /// # Errors
    ///
    /// [`Error::PayloadNotSerializable`] when `value` does not serialize
    /// (its `Serialize` fails, a map key that is not a string, ...) or
    /// already has an `"@class"` member.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use zk_recipes::Payload;
    /// let mut m = BTreeMap::new();
    /// m.insert("description", "d");
    /// let p = Payload::typed("com.example.Details", &m)?;
    /// assert_eq!(p.as_json(), r#"{"@class":"com.example.Details","description":"d"}"#);
    /// let back: BTreeMap<String, String> = p.get("com.example.Details")?;
    /// assert_eq!(back["description"], "d");
    /// // A map whose keys are not strings does not serialize to JSON.
    /// let mut bad = BTreeMap::new();
    /// bad.insert(vec![1u8], 1);
    /// assert!(Payload::typed("x.Y", &bad).is_err());
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn typed<T: Serialize + ?Sized>(class: &str, value: &T) -> Result<Payload> {
        let not = |reason: String| Error::PayloadNotSerializable {
            class: class.to_string(),
            reason,
        };
        let json = serde_json::to_string(value).map_err(|e| not(e.to_string()))?;
        let raw = if let Some(rest) = json.strip_prefix('{') {
            if let serde_json::Value::Object(m) =
                serde_json::from_str::<serde_json::Value>(&json).map_err(|e| not(e.to_string()))?
            {
                if m.contains_key("@class") {
                    return Err(not("the value has an \"@class\" member of its own".into()));
                }
            }
            let sep = if rest.starts_with('}') { "" } else { "," };
            format!("{{\"@class\":{}{sep}{rest}", quoted(class))
        } else {
            format!("[{},{json}]", quoted(class))
        };
        Ok(Payload { raw })
    }

    /// The payload read as `T`, when its class tag is `class` (as Java
    /// reads it into its `payloadClass`): the object's members without
    /// `"@class"`, or a wrapper array's value.
    ///
    /// # Errors
    ///
    /// [`Error::PayloadMismatch`] when the tag is another (or none), or the
    /// JSON does not fit `T`.
    ///
    /// # Examples
    ///
    /// ```
    /// let p = zk_recipes::Payload::long(7);
    /// assert_eq!(p.get::<i64>("java.lang.Long")?, 7);
    /// assert!(p.get::<i64>("java.lang.Integer").is_err());
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn get<T: DeserializeOwned>(&self, class: &str) -> Result<T> {
        let found = self.class();
        let mismatch = |reason: String| Error::PayloadMismatch {
            expected: class.to_string(),
            found: found.clone(),
            reason,
        };
        if found.as_deref() != Some(class) {
            return Err(mismatch("another class tag".into()));
        }
        let inner = match self.value() {
            serde_json::Value::Object(mut m) => {
                m.remove("@class");
                serde_json::Value::Object(m)
            }
            serde_json::Value::Array(mut a) => a.pop().unwrap_or(serde_json::Value::Null),
            v => v,
        };
        serde_json::from_value(inner).map_err(|e| mismatch(e.to_string()))
    }
}

/// The payload Spring Cloud Zookeeper and Apache Dubbo register: an id, a
/// name and string metadata, under their own class tags
/// ([`SPRING`](Self::SPRING), [`DUBBO`](Self::DUBBO)). The same fields, but
/// neither Java side reads the other's tag: write the one your readers
/// expect. Spring marks an instance out of service with
/// `metadata.instance_status` other than `"UP"` (absent means up), not with
/// `enabled`.
///
/// # Examples
///
/// ```
/// use zk_recipes::ZookeeperInstance;
/// let zi = ZookeeperInstance::new(Some("application-1"), Some("app")).with("instance_status", "UP");
/// let p = zi.to_payload(ZookeeperInstance::SPRING);
/// assert_eq!(
///     p.as_json(),
///     r#"{"@class":"org.springframework.cloud.zookeeper.discovery.ZookeeperInstance","id":"application-1","name":"app","metadata":{"instance_status":"UP"}}"#
/// );
/// assert_eq!(ZookeeperInstance::from_payload(&p, ZookeeperInstance::SPRING)?, zi);
/// assert!(ZookeeperInstance::from_payload(&p, ZookeeperInstance::DUBBO).is_err());
/// # Ok::<(), zk_recipes::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ZookeeperInstance {
    /// `id` (Spring: the application instance id; Dubbo writes `null`).
    pub id: Option<String>,
    /// `name` (the application name).
    pub name: Option<String>,
    /// `metadata` (Dubbo's keys such as `dubbo.metadata.revision`, Spring's
    /// `instance_status`).
    pub metadata: BTreeMap<String, String>,
}

impl ZookeeperInstance {
    /// Spring Cloud Zookeeper's payload class.
    pub const SPRING: &'static str = "org.springframework.cloud.zookeeper.discovery.ZookeeperInstance";
    /// Apache Dubbo's payload class (application-level discovery).
    pub const DUBBO: &'static str = "org.apache.dubbo.registry.zookeeper.ZookeeperInstance";

    /// One with `id` and `name`, no metadata.
    ///
    /// # Examples
    ///
    /// ```
    /// let zi = zk_recipes::ZookeeperInstance::new(None, Some("app"));
    /// assert!(zi.metadata.is_empty());
    /// ```
    pub fn new(id: Option<&str>, name: Option<&str>) -> ZookeeperInstance {
        ZookeeperInstance {
            id: id.map(str::to_string),
            name: name.map(str::to_string),
            metadata: BTreeMap::new(),
        }
    }

    /// With a metadata entry.
    ///
    /// # Examples
    ///
    /// ```
    /// let zi = zk_recipes::ZookeeperInstance::new(None, Some("app")).with("k", "v");
    /// assert_eq!(zi.metadata["k"], "v");
    /// ```
    #[must_use]
    pub fn with(mut self, key: &str, value: &str) -> ZookeeperInstance {
        self.metadata.insert(key.to_string(), value.to_string());
        self
    }

    /// As a payload tagged `class` (`{"@class":...,"id":...,"name":...,
    /// "metadata":{...}}`, Jackson's order for these classes).
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::ZookeeperInstance;
    /// let p = ZookeeperInstance::new(None, Some("app")).to_payload(ZookeeperInstance::DUBBO);
    /// assert!(p.as_json().contains(r#""id":null,"name":"app""#));
    /// ```
    pub fn to_payload(&self, class: &str) -> Payload {
        let mut raw = String::from("{\"@class\":");
        write_str(&mut raw, class);
        let opt = |raw: &mut String, v: &Option<String>| match v {
            Some(s) => write_str(raw, s),
            None => raw.push_str("null"),
        };
        raw.push_str(",\"id\":");
        opt(&mut raw, &self.id);
        raw.push_str(",\"name\":");
        opt(&mut raw, &self.name);
        raw.push_str(",\"metadata\":{");
        for (i, (k, v)) in self.metadata.iter().enumerate() {
            if i > 0 {
                raw.push(',');
            }
            write_str(&mut raw, k);
            raw.push(':');
            write_str(&mut raw, v);
        }
        raw.push_str("}}");
        Payload { raw }
    }

    /// Reads one from a payload tagged `class`: other members are ignored,
    /// a missing or `null` `metadata` is empty, a metadata value that is not
    /// a string is kept as its JSON text.
    ///
    /// # Errors
    ///
    /// [`Error::PayloadMismatch`] when the tag is not `class`, or `id`,
    /// `name` or `metadata` has the wrong type.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::{Payload, ZookeeperInstance};
    /// let p = Payload::from_json(
    ///     r#"{"@class":"org.apache.dubbo.registry.zookeeper.ZookeeperInstance","id":null,"name":"app","metadata":{"dubbo.metadata.revision":"abc"}}"#,
    /// )?;
    /// let zi = ZookeeperInstance::from_payload(&p, ZookeeperInstance::DUBBO)?;
    /// assert_eq!(zi.metadata["dubbo.metadata.revision"], "abc");
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn from_payload(payload: &Payload, class: &str) -> Result<ZookeeperInstance> {
        let found = payload.class();
        let mismatch = |reason: &str| Error::PayloadMismatch {
            expected: class.to_string(),
            found: found.clone(),
            reason: reason.to_string(),
        };
        if found.as_deref() != Some(class) {
            return Err(mismatch("another class tag"));
        }
        let serde_json::Value::Object(m) = payload.value() else {
            return Err(mismatch("not an object"));
        };
        let text = |key: &str| -> Result<Option<String>> {
            match m.get(key) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(mismatch(&format!("{key} is not a string"))),
            }
        };
        let mut metadata = BTreeMap::new();
        match m.get("metadata") {
            None | Some(serde_json::Value::Null) => {}
            Some(serde_json::Value::Object(md)) => {
                for (k, v) in md {
                    let v = match v {
                        serde_json::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    metadata.insert(k.clone(), v);
                }
            }
            Some(_) => return Err(mismatch("metadata is not an object")),
        }
        Ok(ZookeeperInstance {
            id: text("id")?,
            name: text("name")?,
            metadata,
        })
    }
}
