//! SASL on Apache ZooKeeper: the JAAS `Server` section (DIGEST-MD5 users or a
//! Kerberos keytab), the `sasl` auth provider, and the enforcement switches.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The mechanism a server's JAAS `Server` section gives it (a ZooKeeper 3.8
/// server speaks exactly one). `Debug` lists DIGEST-MD5 users without their
/// passwords.
///
/// # Examples
///
/// ```
/// use zk_testing::apache::{ApacheSasl, ServerMechanism};
/// let s = ApacheSasl::digest_md5(&[("bob", "bobsecret")]);
/// assert!(matches!(&s.mechanism, ServerMechanism::DigestMd5(users) if users[0].0 == "bob"));
/// assert_eq!(format!("{:?}", s.mechanism), "DigestMd5([\"bob\"])");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub enum ServerMechanism {
    /// ZooKeeper's `DigestLoginModule` with these `(user, password)` pairs
    /// (`user_<name>="<password>"`): DIGEST-MD5.
    DigestMd5(Vec<(String, String)>),
    /// Java's `Krb5LoginModule` with `principal`'s key from `keytab`
    /// (`zookeeper/<host>@<REALM>`; the server accepts only tickets for it),
    /// and the `krb5.conf` naming the KDC: GSSAPI.
    Kerberos {
        /// The server's principal, e.g. `zookeeper/localhost@EXAMPLE.TEST`.
        principal: String,
        /// The keytab holding its key.
        keytab: PathBuf,
        /// The `krb5.conf` (`-Djava.security.krb5.conf`).
        krb5_conf: PathBuf,
    },
}

impl fmt::Debug for ServerMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerMechanism::DigestMd5(users) => f
                .debug_tuple("DigestMd5")
                .field(&users.iter().map(|(u, _)| u.as_str()).collect::<Vec<_>>())
                .finish(),
            ServerMechanism::Kerberos {
                principal,
                keytab,
                krb5_conf,
            } => f
                .debug_struct("Kerberos")
                .field("principal", principal)
                .field("keytab", keytab)
                .field("krb5_conf", krb5_conf)
                .finish(),
        }
    }
}

/// SASL settings of an Apache ZooKeeper server ([`ApacheConfig::sasl`]): the
/// mechanism, ZooKeeper's `sasl` auth provider (`authProvider.1=
/// org.apache.zookeeper.server.auth.SASLAuthenticationProvider`, always, so
/// that `sasl:` ACLs work), and optional enforcement, identity and super
/// user switches. `Debug` lists DIGEST-MD5 users without their passwords.
///
/// Every server started with it (a standalone server, each ensemble member)
/// gets a `jaas.conf` in its directory and the JVM flags
/// `-Djava.security.auth.login.config` (and `-Djava.security.krb5.conf`
/// for Kerberos).
///
/// # Examples
///
/// ```no_run
/// use zk_testing::apache::{ApacheConfig, ApacheSasl, ApacheServer};
///
/// let sasl = ApacheSasl::digest_md5(&[("bob", "bobsecret")]).enforced();
/// let server = ApacheServer::start(ApacheConfig { sasl: Some(sasl), ..ApacheConfig::default() })?;
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// [`ApacheConfig::sasl`]: super::ApacheConfig::sasl
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApacheSasl {
    /// The JAAS `Server` section's mechanism.
    pub mechanism: ServerMechanism,
    /// `enforce.auth.enabled=true` and `enforce.auth.schemes=sasl`: a
    /// connection that has not authenticated gets `-124` for any request
    /// and is closed (the session lives).
    pub enforce: bool,
    /// `sessionRequireClientSASLAuth=true` (the same enforcement, and SASL
    /// failures answered with -124 instead of -115).
    pub require_client_sasl: bool,
    /// `kerberos.removeRealmFromPrincipal=true`: the id of `client@REALM` is
    /// `sasl:client`.
    pub remove_realm: bool,
    /// `kerberos.removeHostFromPrincipal=true`: the id of `app/host@REALM`
    /// is `sasl:app@REALM`.
    pub remove_host: bool,
    /// `-Dzookeeper.superUser=<id>`: the SASL id that is also `super`.
    pub super_user: Option<String>,
}

impl ApacheSasl {
    fn with(mechanism: ServerMechanism) -> ApacheSasl {
        ApacheSasl {
            mechanism,
            enforce: false,
            require_client_sasl: false,
            remove_realm: false,
            remove_host: false,
            super_user: None,
        }
    }

    /// DIGEST-MD5 with `users` (`(name, password)` pairs), no enforcement.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = zk_testing::apache::ApacheSasl::digest_md5(&[("bob", "bobsecret")]);
    /// assert!(!format!("{s:?}").contains("bobsecret"));
    /// ```
    pub fn digest_md5(users: &[(&str, &str)]) -> ApacheSasl {
        ApacheSasl::with(ServerMechanism::DigestMd5(
            users.iter().map(|(u, p)| (u.to_string(), p.to_string())).collect(),
        ))
    }

    /// Kerberos as `zookeeper/<host>@<realm>` of `kdc` (its keytab made by
    /// [`Kdc::start`](crate::kdc::Kdc::start) for `localhost` and
    /// `127.0.0.1`), no enforcement. Clients must ask for that principal:
    /// one dialling `127.0.0.1` asks for `zookeeper/127.0.0.1` unless told
    /// otherwise.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let kdc = zk_testing::kdc::Kdc::start()?;
    /// let s = zk_testing::apache::ApacheSasl::kerberos(&kdc, "127.0.0.1");
    /// # let _ = s;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn kerberos(kdc: &crate::kdc::Kdc, host: &str) -> ApacheSasl {
        ApacheSasl::with(ServerMechanism::Kerberos {
            principal: kdc.principal(&format!("zookeeper/{host}")),
            keytab: kdc.server_keytab(host),
            krb5_conf: kdc.krb5_conf().to_path_buf(),
        })
    }

    /// With [`enforce`](ApacheSasl::enforce) on.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_testing::apache::ApacheSasl::digest_md5(&[]).enforced().enforce);
    /// ```
    pub fn enforced(mut self) -> ApacheSasl {
        self.enforce = true;
        self
    }

    /// With [`require_client_sasl`](ApacheSasl::require_client_sasl) on.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_testing::apache::ApacheSasl::digest_md5(&[]).requiring_client_sasl().require_client_sasl);
    /// ```
    pub fn requiring_client_sasl(mut self) -> ApacheSasl {
        self.require_client_sasl = true;
        self
    }

    /// With [`remove_realm`](ApacheSasl::remove_realm) on.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_testing::apache::ApacheSasl::digest_md5(&[]).removing_realm().remove_realm);
    /// ```
    pub fn removing_realm(mut self) -> ApacheSasl {
        self.remove_realm = true;
        self
    }

    /// With `id` as [`super_user`](ApacheSasl::super_user).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = zk_testing::apache::ApacheSasl::digest_md5(&[]).with_super_user("admin");
    /// assert_eq!(s.super_user.as_deref(), Some("admin"));
    /// ```
    pub fn with_super_user(mut self, id: &str) -> ApacheSasl {
        self.super_user = Some(id.to_string());
        self
    }

    /// The `zoo.cfg` lines.
    pub(super) fn cfg(&self) -> String {
        let mut s = String::from("authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n");
        if self.enforce {
            s.push_str("enforce.auth.enabled=true\nenforce.auth.schemes=sasl\n");
        }
        if self.require_client_sasl {
            s.push_str("sessionRequireClientSASLAuth=true\n");
        }
        if self.remove_realm {
            s.push_str("kerberos.removeRealmFromPrincipal=true\n");
        }
        if self.remove_host {
            s.push_str("kerberos.removeHostFromPrincipal=true\n");
        }
        s
    }

    /// The JAAS file's text.
    pub(super) fn jaas(&self) -> String {
        // JAAS option values are Java string literals in double quotes.
        let quote = |v: &str| v.replace('\\', "\\\\").replace('"', "\\\"");
        match &self.mechanism {
            ServerMechanism::DigestMd5(users) => {
                let mut s = String::from("Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required");
                for (u, p) in users {
                    s.push_str(&format!("\n  user_{u}=\"{}\"", quote(p)));
                }
                s.push_str(";\n};\n");
                s
            }
            ServerMechanism::Kerberos { principal, keytab, .. } => format!(
                "Server {{\n  com.sun.security.auth.module.Krb5LoginModule required\n  \
                 useKeyTab=true\n  keyTab=\"{}\"\n  storeKey=true\n  useTicketCache=false\n  \
                 isInitiator=false\n  principal=\"{}\";\n}};\n",
                quote(&keytab.display().to_string()),
                quote(principal)
            ),
        }
    }

    /// Writes the JAAS file into `dir` and returns the JVM flags.
    pub(super) fn write_jvm_flags(&self, dir: &Path) -> io::Result<Vec<String>> {
        let jaas = dir.join("jaas.conf");
        fs::write(&jaas, self.jaas())?;
        let mut flags = vec![format!("-Djava.security.auth.login.config={}", jaas.display())];
        if let ServerMechanism::Kerberos { krb5_conf, .. } = &self.mechanism {
            flags.push(format!("-Djava.security.krb5.conf={}", krb5_conf.display()));
        }
        if let Some(u) = &self.super_user {
            flags.push(format!("-Dzookeeper.superUser={u}"));
        }
        Ok(flags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_jaas_lists_every_user() {
        let s = ApacheSasl::digest_md5(&[("bob", "bobsecret"), ("eve", "q\"uote")]);
        let j = s.jaas();
        assert!(j.contains("DigestLoginModule required"), "{j}");
        assert!(j.contains("user_bob=\"bobsecret\""), "{j}");
        assert!(j.contains("user_eve=\"q\\\"uote\""), "{j}");
        assert!(j.trim_end().ends_with("};"), "{j}");
        assert!(!format!("{s:?}").contains("bobsecret"));
    }

    #[test]
    fn kerberos_jaas_names_the_keytab_and_principal() {
        let s = ApacheSasl::with(ServerMechanism::Kerberos {
            principal: "zookeeper/localhost@EXAMPLE.TEST".into(),
            keytab: "/k/zk.keytab".into(),
            krb5_conf: "/k/krb5.conf".into(),
        });
        let j = s.jaas();
        for part in [
            "Krb5LoginModule required",
            "keyTab=\"/k/zk.keytab\"",
            "principal=\"zookeeper/localhost@EXAMPLE.TEST\"",
            "isInitiator=false",
        ] {
            assert!(j.contains(part), "{part} not in {j}");
        }
    }

    #[test]
    fn cfg_has_the_provider_and_only_the_switches_asked_for() {
        let plain = ApacheSasl::digest_md5(&[]).cfg();
        assert_eq!(
            plain,
            "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n"
        );
        let all = ApacheSasl::digest_md5(&[])
            .enforced()
            .requiring_client_sasl()
            .removing_realm()
            .cfg();
        for line in [
            "enforce.auth.enabled=true",
            "enforce.auth.schemes=sasl",
            "sessionRequireClientSASLAuth=true",
            "kerberos.removeRealmFromPrincipal=true",
        ] {
            assert!(all.lines().any(|l| l == line), "{line} not in {all}");
        }
    }
}
