//! Curator's URI templates ([`UriSpec`]; its `build` is with the instance,
//! in `instance.rs`) and an endpoint that does not trust a negative port
//! ([`Endpoint`]).

use std::collections::HashMap;

use crate::error::{Error, Result};

/// One part of a [`UriSpec`]: literal text, or a variable's name.
///
/// # Examples
///
/// ```
/// let p = zk_recipes::UriPart::variable("port");
/// assert!(p.is_variable() && p.value() == "port");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UriPart {
    value: String,
    variable: bool,
}

impl UriPart {
    /// Literal text.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!zk_recipes::UriPart::literal("://").is_variable());
    /// ```
    pub fn literal(value: &str) -> UriPart {
        UriPart {
            value: value.to_string(),
            variable: false,
        }
    }

    /// A variable.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_recipes::UriPart::variable("scheme").is_variable());
    /// ```
    pub fn variable(name: &str) -> UriPart {
        UriPart {
            value: name.to_string(),
            variable: true,
        }
    }

    /// The text, or the variable's name.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_recipes::UriPart::literal("/x").value(), "/x");
    /// ```
    pub fn value(&self) -> &str {
        &self.value
    }

    /// Whether this is a variable.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!zk_recipes::UriPart::literal("/x").is_variable());
    /// ```
    pub fn is_variable(&self) -> bool {
        self.variable
    }
}

/// Curator's `UriSpec`: a template such as `{scheme}://{address}:{port}`,
/// kept as its parts (the JSON's `uriSpec.parts`).
///
/// Parsing is Curator's: text outside braces is a literal (kept verbatim),
/// text inside a variable (trimmed); `{}` makes no part at all. Building
/// ([`build`](UriSpec::build)) is Curator's too, trap included: `scheme` is
/// `https` whenever the instance has an `ssl_port`, even Druid's `-1` (TLS
/// off). To pick a port that is really there, use
/// [`ServiceInstance::endpoint`](crate::ServiceInstance::endpoint), which treats ports `<= 0` as absent.
///
/// # Examples
///
/// ```
/// use zk_recipes::{ServiceInstance, UriSpec};
/// let spec = UriSpec::parse("{scheme}://{address}:{port}/x/{ssl-port}{[}lit{]}")?;
/// let i = ServiceInstance::builder("svc").address("10.0.0.5").port(8080).ssl_port(8443).build()?;
/// assert_eq!(spec.build(Some(&i), &[]), "https://10.0.0.5:8080/x/8443{lit}");
/// assert_eq!(UriSpec::parse("{scheme}://{address}:{port}{missing}/p")?.build(None, &[]), "http://:/p");
/// # Ok::<(), zk_recipes::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct UriSpec {
    parts: Vec<UriPart>,
}

impl UriSpec {
    /// Parses a template as Curator's `UriSpec(String)`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidUriSpec`] for a `{` inside a variable, a `}`
    /// without its `{`, or a `{` never closed (Curator's
    /// `IllegalStateException`).
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::{UriPart, UriSpec};
    /// let s = UriSpec::parse("{ scheme }://{}x")?;
    /// assert_eq!(s.parts(), &[UriPart::variable("scheme"), UriPart::literal("://"), UriPart::literal("x")]);
    /// assert!(UriSpec::parse("{a{b}}").is_err());
    /// assert!(UriSpec::parse("a}").is_err());
    /// assert!(UriSpec::parse("{a").is_err());
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn parse(spec: &str) -> Result<UriSpec> {
        let bad = |reason: &str| Error::InvalidUriSpec {
            spec: spec.to_string(),
            reason: reason.to_string(),
        };
        let mut parts = Vec::new();
        let mut inside = false;
        let mut token = String::new();
        let flush = |token: &mut String, inside: bool, parts: &mut Vec<UriPart>| {
            if !token.is_empty() {
                let value = if inside {
                    token.trim().to_string()
                } else {
                    token.clone()
                };
                parts.push(UriPart {
                    value,
                    variable: inside,
                });
                token.clear();
            }
        };
        for c in spec.chars() {
            match c {
                '{' => {
                    if inside {
                        return Err(bad("{ is not allowed inside of a variable specification"));
                    }
                    flush(&mut token, inside, &mut parts);
                    inside = true;
                }
                '}' => {
                    if !inside {
                        return Err(bad("} must be preceded by {"));
                    }
                    flush(&mut token, inside, &mut parts);
                    inside = false;
                }
                c => token.push(c),
            }
        }
        if inside {
            return Err(bad("final variable not closed: expected }"));
        }
        flush(&mut token, inside, &mut parts);
        Ok(UriSpec { parts })
    }

    /// A template of these parts.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::{UriPart, UriSpec};
    /// let s = UriSpec::from_parts(vec![UriPart::variable("address"), UriPart::literal(":1")]);
    /// assert_eq!(s.build(None, &[("address", "h")]), "h:1");
    /// ```
    pub fn from_parts(parts: Vec<UriPart>) -> UriSpec {
        UriSpec { parts }
    }

    /// The parts.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_recipes::UriSpec::parse("x")?.parts().len(), 1);
    /// # Ok::<(), zk_recipes::Error>(())
    /// ```
    pub fn parts(&self) -> &[UriPart] {
        &self.parts
    }

    /// The parts rendered with `vars` (a variable missing from them
    /// renders as nothing).
    pub(crate) fn render(&self, vars: &HashMap<&str, String>) -> String {
        let mut out = String::new();
        for p in &self.parts {
            if p.variable {
                if let Some(v) = vars.get(p.value.as_str()) {
                    out.push_str(v);
                }
            } else {
                out.push_str(&p.value);
            }
        }
        out
    }
}

/// Where to reach an instance: its scheme, address and a port that is
/// really there ([`ServiceInstance::endpoint`](crate::ServiceInstance::endpoint)).
///
/// # Examples
///
/// ```
/// let i = zk_recipes::ServiceInstance::builder("s").address("h").port(80).ssl_port(-1).build()?;
/// let e = i.endpoint().unwrap();
/// assert_eq!((e.scheme, e.address.as_str(), e.port), ("http", "h", 80));
/// assert_eq!(e.to_string(), "http://h:80");
/// # Ok::<(), zk_recipes::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// `"https"` for the SSL port, `"http"` for the plain one.
    pub scheme: &'static str,
    /// The instance's address.
    pub address: String,
    /// The port (always > 0).
    pub port: u16,
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.address.contains(':') && !self.address.starts_with('[') {
            write!(f, "{}://[{}]:{}", self.scheme, self.address, self.port)
        } else {
            write!(f, "{}://{}:{}", self.scheme, self.address, self.port)
        }
    }
}
