//! GSSAPI (Kerberos) for SASL: the client side of RFC 4752 over the system's
//! MIT krb5, through the `libgssapi` crate.
//!
//! One exchange, as ZooKeeper 3.8's server (Java's `GssKrb5Server`) speaks it:
//!
//! 1. credentials: the process's default (`KRB5CCNAME`, or a client keytab
//!    in `KRB5_CLIENT_KTNAME`) when neither a keytab nor a cache is set;
//!    otherwise `gss_acquire_cred_from` with the cache (`ccache`) and the
//!    keytab (`client_keytab`; a keytab alone gets an in-memory cache of its
//!    own, one per principal and keytab, so tickets are reused across
//!    connections and the process's default cache is never written);
//! 2. the initial token: `gss_init_sec_context` for the server's principal
//!    ([`GssapiConfig::server_principal_for`] as a Kerberos principal name,
//!    or `service@host` as a host-based service name when
//!    [`GssapiConfig::is_canonicalizing`], which Kerberos canonicalizes as
//!    its `krb5.conf` says, its realm then that of `krb5.conf`'s
//!    `domain_realm` mapping, not [`GssapiConfig::server_realm`]), mutual
//!    authentication requested: the AP-REQ;
//! 3. the server's AP-REP (the mutual round), answered with an empty token
//!    once the context is established;
//! 4. the server's wrapped 4-byte security-layer offer, which must include
//!    layer 1 (none): answered wrapped `[1, 0, 0, 0]` + the client
//!    principal's name (the authzid);
//! 5. done only after the server's final null token.
//!
//! Steps 1 and 2 may ask the KDC (an AS exchange with a keytab, a TGS
//! exchange for the server's ticket). krb5 gives up on a KDC that accepts a
//! connection and never answers only after its own schedule: 27 s for one
//! KDC address over TCP, measured with MIT krb5 1.20.1 (Debian 12) for both
//! exchanges (a closed port fails in 2 ms); no `krb5.conf` setting of 1.20
//! shortens it (a `request_timeout` there is ignored). So when the I/O
//! thread tells the connection's deadline, steps 1 and 2 run on a thread of
//! their own, waited for until then: a KDC that does not answer is
//! [`SaslErrorKind::KdcUnreachable`] at the connection's deadline, and the
//! waiting thread ends when krb5 gives up. At most [`MAX_KDC_WAITERS`] such
//! threads wait for one client (its count is the client's); further attempts
//! fail at once with the same kind.
//!
//! Failures and their kinds: a missing or unreadable keytab, a keytab
//! without the principal's keys, no cache or no ticket in it, an expired
//! ticket, a client principal the KDC does not know or whose key does not
//! match → [`SaslErrorKind::Credentials`]; a KDC that refuses connections or
//! does not answer in time → [`SaslErrorKind::KdcUnreachable`]; a server
//! principal the KDC does not know, a realm krb5 knows no KDC for, a name
//! that does not parse → [`SaslErrorKind::InvalidConfig`] (the KDC, not the
//! ZooKeeper server, says so, and every attempt with the same settings meets
//! the same answer: the settings, or the dialled host, name a principal that
//! does not exist); any server token that does not fit (not a Kerberos
//! token, one that does not unwrap, no layer "none", a token after the end)
//! → [`SaslErrorKind::Protocol`]. Messages name principals, caches and
//! keytab paths with krb5's own explanation; never a key, a ticket or a
//! token.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use libgssapi::context::{ClientCtx, CtxFlags, SecurityContext};
use libgssapi::credential::{Cred, CredUsage};
use libgssapi::error::{Error as GssError, MajorFlags};
use libgssapi::name::Name;
use libgssapi::oid::{GSS_MECH_KRB5, GSS_NT_HOSTBASED_SERVICE, GSS_NT_KRB5_PRINCIPAL};

use super::{GssapiConfig, Mechanism, Step, GSSAPI};
use crate::error::{SaslError, SaslErrorKind};

/// How many threads may wait for a KDC at once for one client (see the module
/// documentation); a connection attempt beyond fails at once as
/// [`SaslErrorKind::KdcUnreachable`].
const MAX_KDC_WAITERS: usize = 8;

/// RFC 4752's security layer "none".
const LAYER_NONE: u8 = 1;

/// MIT krb5's error codes (`krb5.h`, com_err table `krb5`) that the minor
/// status of a failed call may carry, for the kinds above.
mod krb5 {
    pub const KDC_UNREACH: i32 = -1765328228;
    pub const REALM_CANT_RESOLVE: i32 = -1765328164;
    pub const S_PRINCIPAL_UNKNOWN: i32 = -1765328377;
    pub const REALM_UNKNOWN: i32 = -1765328230;
    pub const CONFIG_NODEFREALM: i32 = -1765328160;
}

fn err(kind: SaslErrorKind, message: impl Into<String>) -> SaslError {
    SaslError::new(kind, GSSAPI, message)
}

fn protocol(message: impl Into<String>) -> SaslError {
    err(SaslErrorKind::Protocol, message)
}

/// Where the client's credentials come from.
#[derive(Debug, Clone)]
enum Creds {
    /// The process's default: `KRB5CCNAME` (or `KRB5_CLIENT_KTNAME`).
    Default,
    /// A named credential cache, its own principal.
    Cache(String),
    /// `principal`'s keys in `keytab`, tickets kept in `cache`.
    Keytab {
        keytab: PathBuf,
        principal: String,
        cache: String,
        cache_given: bool,
    },
}

impl Creds {
    /// Says whose credentials these are, for messages.
    fn describe(&self) -> String {
        match self {
            Creds::Default => "the process's default credentials (KRB5CCNAME)".to_string(),
            Creds::Cache(c) => format!("the credential cache {c}"),
            Creds::Keytab {
                keytab,
                principal,
                cache,
                cache_given,
            } => {
                if *cache_given {
                    format!("{principal} with keytab {} and cache {cache}", keytab.display())
                } else {
                    format!("{principal} with keytab {}", keytab.display())
                }
            }
        }
    }
}

/// What one exchange asks for: the target, the credentials, the flags.
#[derive(Debug, Clone)]
struct Plan {
    /// `service/host[@realm]` (a principal name) or `service@host` (a
    /// host-based service name).
    target: String,
    hostbased: bool,
    creds: Creds,
    flags: CtxFlags,
}

impl Plan {
    fn new(config: &GssapiConfig, host: &str) -> Result<Plan, SaslError> {
        let invalid = |m: String| err(SaslErrorKind::InvalidConfig, m);
        let (target, hostbased) = if config.is_canonicalizing() {
            let service = config.service.as_deref().unwrap_or(zk_proto::sasl::SERVICE);
            (format!("{service}@{host}"), true)
        } else {
            (config.server_principal_for(host), false)
        };
        if target.is_empty() || target.contains('\0') || target.starts_with(['/', '@']) {
            return Err(invalid(format!(
                "the server principal {target:?} is not a Kerberos name"
            )));
        }
        let creds = match (&config.keytab, &config.client_principal, &config.credential_cache) {
            (Some(keytab), Some(principal), cache) => {
                if principal.is_empty() || principal.contains('\0') {
                    return Err(invalid(format!(
                        "the client principal {principal:?} is not a Kerberos name"
                    )));
                }
                if keytab.as_os_str().is_empty() || keytab.to_str().map_or(true, |k| k.contains('\0')) {
                    return Err(invalid(format!(
                        "the keytab path {} is empty or not UTF-8",
                        keytab.display()
                    )));
                }
                let (cache, cache_given) = match cache {
                    Some(c) => (c.clone(), true),
                    None => (memory_cache_for(principal, keytab), false),
                };
                Creds::Keytab {
                    keytab: keytab.clone(),
                    principal: principal.clone(),
                    cache,
                    cache_given,
                }
            }
            (_, _, Some(cache)) => Creds::Cache(cache.clone()),
            _ => Creds::Default,
        };
        if let Creds::Cache(c) | Creds::Keytab { cache: c, .. } = &creds {
            if c.is_empty() || c.contains('\0') {
                return Err(invalid(format!(
                    "the credential cache name {c:?} is empty or has a NUL"
                )));
            }
        }
        Ok(Plan {
            target,
            hostbased,
            creds,
            flags: CtxFlags::GSS_C_MUTUAL_FLAG | CtxFlags::GSS_C_SEQUENCE_FLAG | CtxFlags::GSS_C_INTEG_FLAG,
        })
    }

    fn target_kind(&self) -> &'static str {
        if self.hostbased {
            "host-based service"
        } else {
            "server principal"
        }
    }
}

/// The in-memory cache that a keytab without a named cache keeps its tickets
/// in: one per principal and keytab path, for the process's life, so that a
/// reconnect reuses the tickets instead of asking the KDC again.
fn memory_cache_for(principal: &str, keytab: &Path) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    principal.hash(&mut h);
    keytab.hash(&mut h);
    format!("MEMORY:zk-framework-{:016x}", h.finish())
}

/// Starts one exchange with the server dialled as `host`. Nothing is asked
/// of Kerberos before [`Mechanism::initial`].
pub(super) fn start(
    config: &GssapiConfig,
    host: &str,
    waiters: &Arc<AtomicUsize>,
) -> Result<Box<dyn Mechanism>, SaslError> {
    Ok(Box::new(Gssapi {
        waiters: waiters.clone(),
        plan: Plan::new(config, host)?,
        stage: Stage::Start,
        deadline: None,
    }))
}

enum Stage {
    Start,
    /// Waiting for the server's token to the context (the mutual round).
    Establishing(ClientCtx),
    /// Waiting for the server's wrapped security-layer offer.
    Layers(ClientCtx),
    /// Waiting for the server's final null token.
    Final,
    Done,
}

struct Gssapi {
    /// The client's count of threads waiting for a KDC.
    waiters: Arc<AtomicUsize>,
    plan: Plan,
    stage: Stage,
    deadline: Option<Instant>,
}

impl Mechanism for Gssapi {
    fn name(&self) -> &'static str {
        GSSAPI
    }

    fn set_deadline(&mut self, deadline: Instant) {
        self.deadline = Some(deadline);
    }

    fn initial(&mut self) -> Result<Vec<u8>, SaslError> {
        let plan = self.plan.clone();
        let (ctx, token) = bounded(&self.waiters, self.deadline, &self.plan, move || first_token(&plan))?;
        self.stage = if ctx.is_complete() {
            Stage::Layers(ctx)
        } else {
            Stage::Establishing(ctx)
        };
        Ok(token)
    }

    fn step(&mut self, reply: Option<&[u8]>) -> Result<Step, SaslError> {
        match std::mem::replace(&mut self.stage, Stage::Done) {
            Stage::Establishing(mut ctx) => {
                let Some(token) = reply else {
                    return Err(protocol(
                        "the server answered the Kerberos ticket with nothing (a null token)",
                    ));
                };
                match ctx.step(Some(token), None) {
                    Ok(out) => {
                        let out = out.map(|b| b.to_vec()).unwrap_or_default();
                        self.stage = if ctx.is_complete() {
                            Stage::Layers(ctx)
                        } else {
                            Stage::Establishing(ctx)
                        };
                        Ok(Step::Send(out))
                    }
                    Err(e) => Err(protocol(format!(
                        "the server's answer to the Kerberos ticket for {} is not a valid Kerberos token{}: {}",
                        self.plan.target,
                        other_mechanism_hint(token),
                        describe(&e)
                    ))),
                }
            }
            Stage::Layers(mut ctx) => {
                let Some(token) = reply else {
                    return Err(protocol("the server sent no security-layer offer (a null token)"));
                };
                let offer = ctx.unwrap(token).map_err(|e| {
                    protocol(format!(
                        "the server's security-layer offer does not unwrap{}: {}",
                        other_mechanism_hint(token),
                        describe(&e)
                    ))
                })?;
                if offer.len() != 4 {
                    return Err(protocol(format!(
                        "the server's security-layer offer has {} bytes, not 4",
                        offer.len()
                    )));
                }
                if offer[0] & LAYER_NONE == 0 {
                    return Err(protocol(format!(
                        "the server offers only security layers {:#04x} (integrity or privacy); this client speaks SASL without one",
                        offer[0]
                    )));
                }
                let authzid = ctx
                    .source_name()
                    .map_err(|e| {
                        if expired(&e) {
                            err(
                                SaslErrorKind::Credentials,
                                format!(
                                    "the ticket for {} expired during the exchange: {}",
                                    self.plan.target,
                                    describe(&e)
                                ),
                            )
                        } else {
                            protocol(format!("the context has no client name: {}", describe(&e)))
                        }
                    })?
                    .to_string();
                let mut answer = vec![LAYER_NONE, 0, 0, 0];
                answer.extend_from_slice(authzid.as_bytes());
                let wrapped = ctx.wrap(false, &answer).map_err(|e| {
                    protocol(format!(
                        "cannot wrap the answer to the security-layer offer: {}",
                        describe(&e)
                    ))
                })?;
                log::debug!("GSSAPI: authenticated to {} as {authzid}", self.plan.target);
                self.stage = Stage::Final;
                Ok(Step::Send(wrapped.to_vec()))
            }
            Stage::Final => match reply {
                None => Ok(Step::Done),
                Some([]) => Ok(Step::Done),
                Some(t) => Err(protocol(format!(
                    "the server sent a {}-byte token after the exchange ended (expected none)",
                    t.len()
                ))),
            },
            Stage::Start | Stage::Done => Err(protocol("a SASL reply outside the exchange")),
        }
    }
}

/// A hint when a token looks like another mechanism's (a DIGEST-MD5
/// challenge is text with `nonce=`).
fn other_mechanism_hint(token: &[u8]) -> &'static str {
    let text = String::from_utf8_lossy(token);
    if text.contains("nonce=") || text.contains("realm=") {
        " (it is a DIGEST-MD5 challenge: the server speaks DIGEST-MD5, not GSSAPI)"
    } else {
        ""
    }
}

/// Steps 1 and 2: the credentials and the first context token (the AP-REQ).
fn first_token(plan: &Plan) -> Result<(ClientCtx, Vec<u8>), SaslError> {
    let cred = credentials(plan)?;
    let oid = if plan.hostbased {
        GSS_NT_HOSTBASED_SERVICE
    } else {
        GSS_NT_KRB5_PRINCIPAL
    };
    let target = Name::new(plan.target.as_bytes(), Some(oid)).map_err(|e| {
        err(
            SaslErrorKind::InvalidConfig,
            format!(
                "the {} {} is not a Kerberos name: {}",
                plan.target_kind(),
                plan.target,
                describe(&e)
            ),
        )
    })?;
    let mut ctx = ClientCtx::new(Some(cred), target, plan.flags, Some(GSS_MECH_KRB5));
    match ctx.step(None, None) {
        Ok(Some(token)) => Ok((ctx, token.to_vec())),
        Ok(None) => Err(protocol("Kerberos made no initial token")),
        Err(e) => Err(classify(
            &e,
            format!(
                "cannot get a Kerberos ticket for the {} {} with {}",
                plan.target_kind(),
                plan.target,
                plan.creds.describe()
            ),
        )),
    }
}

/// Step 1: the client's credentials.
fn credentials(plan: &Plan) -> Result<Cred, SaslError> {
    let what = || format!("cannot use {}", plan.creds.describe());
    match &plan.creds {
        Creds::Default => {
            let mechs = libgssapi::oid::OidSet::singleton(GSS_MECH_KRB5)
                .map_err(|e| classify(&e, "cannot name the Kerberos mechanism".to_string()))?;
            let cred =
                Cred::acquire(None, None, CredUsage::Initiate, Some(&mechs)).map_err(|e| classify(&e, what()))?;
            unexpired(cred, plan)
        }
        Creds::Cache(cache) => {
            let cache = cstring(cache)?;
            let cred = ffi::acquire_cred_from(None, &[(c"ccache", &cache)]).map_err(|e| classify(&e, what()))?;
            unexpired(cred, plan)
        }
        Creds::Keytab {
            keytab,
            principal,
            cache,
            ..
        } => {
            check_keytab(keytab, principal)?;
            let kt = cstring(&format!("FILE:{}", keytab.to_str().unwrap_or_default()))?;
            let cache = cstring(cache)?;
            let p = cstring(principal)?;
            ffi::acquire_cred_from(Some(&p), &[(c"client_keytab", &kt), (c"ccache", &cache)])
                .map_err(|e| classify_credentials(&e, plan))
        }
    }
}

/// A cache's credentials, refused when its ticket has expired: nothing can
/// renew it (a keytab's are renewed by krb5 itself), and a server may still
/// accept it within its clock skew, which would only fail later.
fn unexpired(cred: Cred, plan: &Plan) -> Result<Cred, SaslError> {
    match cred.lifetime() {
        Ok(left) if !left.is_zero() => Ok(cred),
        Ok(_) => Err(err(
            SaslErrorKind::Credentials,
            format!("the ticket in {} has expired (kinit renews it)", plan.creds.describe()),
        )),
        Err(e) if expired(&e) => Err(err(
            SaslErrorKind::Credentials,
            format!(
                "the ticket in {} has expired (kinit renews it): {}",
                plan.creds.describe(),
                describe(&e)
            ),
        )),
        Err(e) => Err(classify(&e, format!("cannot use {}", plan.creds.describe()))),
    }
}

fn cstring(s: &str) -> Result<CString, SaslError> {
    CString::new(s).map_err(|_| err(SaslErrorKind::InvalidConfig, format!("{s:?} has a NUL byte")))
}

/// A keytab that cannot be opened is told as such (krb5 would say the
/// principal has no keys in it).
fn check_keytab(keytab: &Path, principal: &str) -> Result<(), SaslError> {
    let fail = |why: String| {
        err(
            SaslErrorKind::Credentials,
            format!("cannot use the keytab {} for {principal}: {why}", keytab.display()),
        )
    };
    let meta = std::fs::metadata(keytab).map_err(|e| fail(e.to_string()))?;
    if !meta.is_file() {
        return Err(fail("not a file".to_string()));
    }
    let mut head = [0u8; 2];
    std::fs::File::open(keytab)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .map_err(|e| fail(e.to_string()))?;
    // A keytab file starts with 5 and its format's version (1 or 2).
    if head[0] != 5 || !(1..=2).contains(&head[1]) {
        return Err(fail("not a keytab file".to_string()));
    }
    Ok(())
}

/// The kind of a failed credential or context call before the server
/// answered: see the module documentation.
fn kind_of(e: &GssError) -> SaslErrorKind {
    // The minor status is krb5's error code (a signed com_err code).
    match e.minor as i32 {
        krb5::KDC_UNREACH | krb5::REALM_CANT_RESOLVE => return SaslErrorKind::KdcUnreachable,
        krb5::S_PRINCIPAL_UNKNOWN | krb5::REALM_UNKNOWN | krb5::CONFIG_NODEFREALM => {
            return SaslErrorKind::InvalidConfig
        }
        _ => {}
    }
    // The routine error is a number in bits 16-23, not a set of flags.
    let routine = e.major.bits() & ROUTINE_ERROR_MASK;
    if routine == MajorFlags::GSS_S_BAD_NAME.bits() || routine == MajorFlags::GSS_S_BAD_NAMETYPE.bits() {
        return SaslErrorKind::InvalidConfig;
    }
    if routine == MajorFlags::GSS_S_BAD_MECH.bits() {
        return SaslErrorKind::Unsupported;
    }
    SaslErrorKind::Credentials
}

/// Bits 16-23 of a major status: the routine error's number (RFC 2744 3.9.1).
const ROUTINE_ERROR_MASK: u32 = 0x00ff_0000;

/// Whether `e` says the context or the credentials have expired (a server
/// may accept a ticket that expired within its clock skew: the context is
/// then established and expired).
fn expired(e: &GssError) -> bool {
    let routine = e.major.bits() & ROUTINE_ERROR_MASK;
    routine == MajorFlags::GSS_S_CONTEXT_EXPIRED.bits() || routine == MajorFlags::GSS_S_CREDENTIALS_EXPIRED.bits()
}

fn classify(e: &GssError, what: String) -> SaslError {
    let kind = kind_of(e);
    let hint = match kind {
        SaslErrorKind::KdcUnreachable => " (is the KDC in krb5.conf up?)",
        SaslErrorKind::InvalidConfig if e.minor as i32 == krb5::S_PRINCIPAL_UNKNOWN => {
            " (the KDC does not know the server's principal: check the service, host and realm settings, and the host dialled)"
        }
        _ => "",
    };
    err(kind, format!("{what}: {}{hint}", describe(e)))
}

/// As [`classify`], for a failure to get the client's credentials: krb5
/// says "no credentials cache" when a keytab lacks the principal's keys.
fn classify_credentials(e: &GssError, plan: &Plan) -> SaslError {
    let mut what = format!("cannot use {}", plan.creds.describe());
    if let Creds::Keytab { principal, .. } = &plan.creds {
        if e.major.bits() & ROUTINE_ERROR_MASK == MajorFlags::GSS_S_NO_CRED.bits()
            && kind_of(e) == SaslErrorKind::Credentials
        {
            what = format!("{what} (does the keytab hold {principal}'s keys?)");
        }
    }
    classify(e, what)
}

/// krb5's explanation of `e`, on one line (without the "(Success)" of a
/// minor status 0).
fn describe(e: &GssError) -> String {
    let text = e.to_string().split_whitespace().collect::<Vec<_>>().join(" ");
    match text.strip_suffix(" (Success)") {
        Some(t) => t.to_string(),
        None => text,
    }
}

/// Runs `f` (steps 1 and 2) on a thread of its own and waits for it until
/// `deadline` (inline without one): see the module documentation.
fn bounded<T: Send + 'static>(
    waiters: &Arc<AtomicUsize>,
    deadline: Option<Instant>,
    plan: &Plan,
    f: impl FnOnce() -> Result<T, SaslError> + Send + 'static,
) -> Result<T, SaslError> {
    let Some(deadline) = deadline else {
        return f();
    };
    struct Waiter(Arc<AtomicUsize>);
    impl Drop for Waiter {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::AcqRel);
        }
    }
    let counted = waiters.fetch_add(1, Ordering::AcqRel);
    let waiter = Waiter(waiters.clone());
    if counted >= MAX_KDC_WAITERS {
        drop(waiter);
        return Err(err(
            SaslErrorKind::KdcUnreachable,
            format!(
                "{MAX_KDC_WAITERS} earlier requests to the KDC are still unanswered: not asking again for {}",
                plan.target
            ),
        ));
    }
    let (tx, rx) = crossbeam_channel::bounded(1);
    let spawned = std::thread::Builder::new().name("zk-gssapi".into()).spawn(move || {
        let _waiter = waiter;
        let _ = tx.send(f());
    });
    if let Err(e) = spawned {
        return Err(err(
            SaslErrorKind::Credentials,
            format!("cannot start a thread to ask the KDC: {e}"),
        ));
    }
    let wait = deadline.saturating_duration_since(Instant::now());
    match rx.recv_timeout(wait) {
        Ok(r) => r,
        Err(crossbeam_channel::RecvTimeoutError::Timeout) => Err(err(
            SaslErrorKind::KdcUnreachable,
            format!(
                "no ticket for the {} {} with {} within the connection's deadline: the KDC does not answer",
                plan.target_kind(),
                plan.target,
                plan.creds.describe()
            ),
        )),
        Err(crossbeam_channel::RecvTimeoutError::Disconnected) => Err(err(
            SaslErrorKind::Credentials,
            "the thread asking the KDC ended without an answer",
        )),
    }
}

/// The one call `libgssapi` does not wrap: `gss_acquire_cred_from` (MIT's
/// credential store extension), with a principal name imported for it.
#[allow(unsafe_code)]
mod ffi {
    use std::ffi::{c_void, CStr};
    use std::ptr;

    use libgssapi::credential::Cred;
    use libgssapi::error::{Error as GssError, MajorFlags};
    use libgssapi_sys::{
        gss_OID_desc, gss_OID_set_desc, gss_acquire_cred_from, gss_buffer_desc, gss_cred_id_t, gss_cred_usage_t,
        gss_import_name, gss_key_value_element_desc, gss_key_value_set_desc, gss_name_t, gss_release_name, OM_uint32,
        _GSS_C_INDEFINITE, GSS_C_INITIATE,
    };

    /// 1.2.840.113554.1.2.2.1, GSS_KRB5_NT_PRINCIPAL_NAME.
    const KRB5_NT_PRINCIPAL: &[u8] = b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x02\x01";
    /// 1.2.840.113554.1.2.2, the Kerberos 5 mechanism.
    const KRB5_MECH: &[u8] = b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x02";

    fn failed(major: OM_uint32) -> bool {
        major & 0xffff_0000 != 0
    }

    /// Initiator credentials for `principal` (or the store's own) from the
    /// credential store `store` (`ccache`, `client_keytab`, ...).
    pub(super) fn acquire_cred_from(principal: Option<&CStr>, store: &[(&CStr, &CStr)]) -> Result<Cred, GssError> {
        let mut minor: OM_uint32 = 0;
        let mut name: gss_name_t = ptr::null_mut();
        if let Some(p) = principal {
            let mut oid = gss_OID_desc {
                length: KRB5_NT_PRINCIPAL.len() as OM_uint32,
                elements: KRB5_NT_PRINCIPAL.as_ptr() as *mut c_void,
            };
            let mut buf = gss_buffer_desc {
                length: p.to_bytes().len(),
                value: p.as_ptr() as *mut c_void,
            };
            // SAFETY: every pointer is to a live local (or `p`'s bytes, which
            // outlive the call); gss_import_name reads the buffer and the OID
            // and writes a name we release below.
            let major = unsafe { gss_import_name(&mut minor, &mut buf, &mut oid, &mut name) };
            if failed(major) {
                return Err(GssError {
                    major: MajorFlags::from_bits_retain(major),
                    minor,
                });
            }
        }
        let mut elements: Vec<gss_key_value_element_desc> = store
            .iter()
            .map(|(k, v)| gss_key_value_element_desc {
                key: k.as_ptr(),
                value: v.as_ptr(),
            })
            .collect();
        let set = gss_key_value_set_desc {
            count: elements.len() as OM_uint32,
            elements: elements.as_mut_ptr(),
        };
        let mut mech = gss_OID_desc {
            length: KRB5_MECH.len() as OM_uint32,
            elements: KRB5_MECH.as_ptr() as *mut c_void,
        };
        let mut mechs = gss_OID_set_desc {
            count: 1,
            elements: &mut mech,
        };
        let mut cred: gss_cred_id_t = ptr::null_mut();
        // SAFETY: `name` is null or the name imported above; the store's
        // keys and values are NUL-terminated strings borrowed for the call;
        // the mechanism set points to a live local; MIT reads them and writes
        // `cred`, whose ownership `Cred::from_c` takes (and releases on drop).
        let major = unsafe {
            gss_acquire_cred_from(
                &mut minor,
                name,
                _GSS_C_INDEFINITE,
                &mut mechs,
                GSS_C_INITIATE as gss_cred_usage_t,
                &set,
                &mut cred,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        if !name.is_null() {
            let mut m: OM_uint32 = 0;
            // SAFETY: `name` was imported above and is released once.
            unsafe { gss_release_name(&mut m, &mut name) };
        }
        if failed(major) {
            return Err(GssError {
                major: MajorFlags::from_bits_retain(major),
                minor,
            });
        }
        // SAFETY: a fresh credential handle from a successful call, owned by
        // nothing else.
        Ok(unsafe { Cred::from_c(cred) })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use libgssapi::context::ServerCtx;

    use super::*;

    const CLIENT: &str = "client@EXAMPLE.TEST";

    fn gss(major: MajorFlags, minor: i32) -> GssError {
        GssError {
            major,
            minor: minor as u32,
        }
    }

    #[test]
    fn the_target_is_a_principal_name_or_with_canonicalization_a_host_based_service() {
        let p = Plan::new(&GssapiConfig::default(), "127.0.0.1").unwrap();
        assert_eq!((p.target.as_str(), p.hostbased), ("zookeeper/127.0.0.1", false));
        assert!(matches!(p.creds, Creds::Default));
        assert!(p.flags.contains(CtxFlags::GSS_C_MUTUAL_FLAG));
        let p = Plan::new(
            &GssapiConfig::default().canonicalize_hostname(true).service("zk"),
            "zk1",
        )
        .unwrap();
        assert_eq!((p.target.as_str(), p.hostbased), ("zk@zk1", true));
        // An explicit host or principal is taken as it is, canonicalization or not.
        let p = Plan::new(
            &GssapiConfig::default()
                .canonicalize_hostname(true)
                .server_host("h")
                .server_realm("R"),
            "zk1",
        )
        .unwrap();
        assert_eq!((p.target.as_str(), p.hostbased), ("zookeeper/h@R", false));
        let p = Plan::new(&GssapiConfig::default().credential_cache("FILE:/tmp/cc"), "h").unwrap();
        assert!(matches!(&p.creds, Creds::Cache(c) if c == "FILE:/tmp/cc"));
    }

    #[test]
    fn a_keytab_alone_keeps_its_tickets_in_a_memory_cache_of_its_own() {
        let cache = |kt: &str, p: &str| match Plan::new(&GssapiConfig::default().keytab(kt, p), "h").unwrap().creds {
            Creds::Keytab { cache, cache_given, .. } => {
                assert!(!cache_given);
                cache
            }
            other => panic!("{other:?}"),
        };
        let a = cache("/k/a.keytab", "a@R");
        assert!(a.starts_with("MEMORY:zk-framework-"), "{a}");
        assert_eq!(a, cache("/k/a.keytab", "a@R"));
        assert_ne!(a, cache("/k/b.keytab", "a@R"));
        assert_ne!(a, cache("/k/a.keytab", "b@R"));
        let given = Plan::new(
            &GssapiConfig::default()
                .keytab("/k/a.keytab", "a@R")
                .credential_cache("FILE:/c"),
            "h",
        )
        .unwrap();
        assert!(matches!(given.creds, Creds::Keytab { ref cache, cache_given: true, .. } if cache == "FILE:/c"));
    }

    #[test]
    fn names_that_cannot_be_kerberos_names_are_invalid_config() {
        for g in [
            GssapiConfig::default().server_principal(""),
            GssapiConfig::default().server_principal("a\0b"),
            GssapiConfig::default().server_host("").service(""),
            GssapiConfig::default().keytab("/k", ""),
            GssapiConfig::default().keytab("", CLIENT),
            GssapiConfig::default().keytab("/k", "c\0"),
            GssapiConfig::default().credential_cache(""),
            GssapiConfig::default().credential_cache("FILE:\0"),
        ] {
            let e = Plan::new(&g, "h").map(|_| ()).unwrap_err();
            assert_eq!(e.kind(), SaslErrorKind::InvalidConfig, "{g:?}: {e}");
        }
    }

    #[test]
    fn krb5_codes_map_to_kinds() {
        let failure = MajorFlags::GSS_S_FAILURE;
        for (e, kind) in [
            (gss(failure, krb5::KDC_UNREACH), SaslErrorKind::KdcUnreachable),
            (gss(failure, krb5::REALM_CANT_RESOLVE), SaslErrorKind::KdcUnreachable),
            (gss(failure, krb5::S_PRINCIPAL_UNKNOWN), SaslErrorKind::InvalidConfig),
            (gss(failure, krb5::REALM_UNKNOWN), SaslErrorKind::InvalidConfig),
            // C_PRINCIPAL_UNKNOWN, PREAUTH_FAILED, TKT_EXPIRED, FCC_NOFILE
            (gss(failure, -1765328378), SaslErrorKind::Credentials),
            (gss(failure, -1765328360), SaslErrorKind::Credentials),
            (
                gss(MajorFlags::GSS_S_CREDENTIALS_EXPIRED, -1765328352),
                SaslErrorKind::Credentials,
            ),
            // GSS_S_NO_CRED is routine error 7: its bits include those of
            // BAD_NAME (2) and BAD_NAMETYPE (3), which it is not.
            (gss(MajorFlags::GSS_S_NO_CRED, -1765328189), SaslErrorKind::Credentials),
            (gss(MajorFlags::GSS_S_BAD_NAME, 0), SaslErrorKind::InvalidConfig),
            (gss(MajorFlags::GSS_S_BAD_NAMETYPE, 0), SaslErrorKind::InvalidConfig),
            (gss(MajorFlags::GSS_S_BAD_MECH, 0), SaslErrorKind::Unsupported),
        ] {
            assert_eq!(kind_of(&e), kind, "{:#x} {}", e.major.bits(), e.minor as i32);
        }
        assert!(expired(&gss(MajorFlags::GSS_S_CONTEXT_EXPIRED, 0)));
        assert!(expired(&gss(MajorFlags::GSS_S_CREDENTIALS_EXPIRED, 0)));
        assert!(!expired(&gss(MajorFlags::GSS_S_NO_CRED, 0)));
        let e = classify(&gss(failure, krb5::KDC_UNREACH), "cannot".into());
        assert!(e.message().starts_with("cannot: "), "{e}");
        assert!(!e.message().contains("(Success)"), "{e}");
    }

    #[test]
    fn keytabs_are_checked_before_krb5_reads_them() {
        let dir = std::env::temp_dir().join(format!("zk-gssapi-kt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let garbage = dir.join("garbage");
        std::fs::write(&garbage, b"not a keytab").unwrap();
        let short = dir.join("short");
        std::fs::write(&short, [5u8]).unwrap();
        let good = dir.join("good");
        std::fs::write(&good, [5u8, 2, 0, 0]).unwrap();
        for (path, why) in [
            (dir.join("missing"), "No such file"),
            (dir.clone(), "not a file"),
            (garbage, "not a keytab"),
            (short, "failed to fill"),
        ] {
            let e = check_keytab(&path, CLIENT).unwrap_err();
            assert_eq!(e.kind(), SaslErrorKind::Credentials);
            assert!(e.message().contains(why), "{e}");
            assert!(
                e.message().contains(&path.display().to_string()) && e.message().contains(CLIENT),
                "{e}"
            );
        }
        check_keytab(&good, CLIENT).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn mechanism(stage: Stage) -> Gssapi {
        Gssapi {
            waiters: Arc::default(),
            plan: Plan::new(&GssapiConfig::default(), "h").unwrap(),
            stage,
            deadline: None,
        }
    }

    #[test]
    fn the_exchange_ends_only_on_the_servers_final_null_token() {
        let mut m = mechanism(Stage::Final);
        assert!(matches!(m.step(None), Ok(Step::Done)));
        let mut m = mechanism(Stage::Final);
        assert!(matches!(m.step(Some(&[])), Ok(Step::Done)));
        let mut m = mechanism(Stage::Final);
        assert_eq!(m.step(Some(b"more")).unwrap_err().kind(), SaslErrorKind::Protocol);
        for stage in [Stage::Start, Stage::Done] {
            let mut m = mechanism(stage);
            assert_eq!(m.step(Some(b"x")).unwrap_err().kind(), SaslErrorKind::Protocol);
        }
        assert!(other_mechanism_hint(b"realm=\"zk-sasl-md5\",nonce=\"x\"").contains("DIGEST-MD5"));
        assert_eq!(other_mechanism_hint(b"\x60\x82"), "");
    }

    /// The bound, with steps that block until released (a KDC that never
    /// answers): each attempt fails at its deadline, the threads are counted,
    /// an attempt beyond the limit fails at once, and released threads go.
    #[test]
    fn steps_that_block_are_bounded_by_the_deadline_and_their_threads_limited() {
        let plan = Plan::new(&GssapiConfig::default(), "h").unwrap();
        let waiters = Arc::new(AtomicUsize::new(0));
        let (release, blocked) = crossbeam_channel::bounded::<()>(0);
        let wait = Duration::from_millis(100);
        for _ in 0..MAX_KDC_WAITERS {
            let blocked = blocked.clone();
            let t0 = Instant::now();
            let e = bounded(&waiters, Some(Instant::now() + wait), &plan, move || {
                let _ = blocked.recv();
                Ok(())
            })
            .unwrap_err();
            assert_eq!(e.kind(), SaslErrorKind::KdcUnreachable);
            assert!(e.message().contains("zookeeper/h"), "{e}");
            assert!(t0.elapsed() >= wait && t0.elapsed() < wait + Duration::from_secs(5));
        }
        assert_eq!(waiters.load(Ordering::Acquire), MAX_KDC_WAITERS);
        // Another client's count is its own.
        let others = Arc::new(AtomicUsize::new(0));
        assert_eq!(
            bounded(&others, Some(Instant::now() + Duration::from_secs(60)), &plan, || Ok(1)).unwrap(),
            1
        );
        let t0 = Instant::now();
        let e = bounded(&waiters, Some(Instant::now() + Duration::from_secs(60)), &plan, || {
            Ok(())
        })
        .unwrap_err();
        assert_eq!(e.kind(), SaslErrorKind::KdcUnreachable);
        assert!(e.message().contains("still unanswered"), "{e}");
        assert!(t0.elapsed() < Duration::from_secs(5));
        drop(release);
        assert!(zk_testing::wait_until(Duration::from_secs(10), || waiters
            .load(Ordering::Acquire)
            == 0));
        // Steps that answer in time give their result; without a deadline they run here.
        assert_eq!(
            bounded(&waiters, Some(Instant::now() + Duration::from_secs(60)), &plan, || Ok(
                7
            ))
            .unwrap(),
            7
        );
        let here = std::thread::current().id();
        assert_eq!(
            bounded(&waiters, None, &plan, move || Ok(std::thread::current().id())).unwrap(),
            here
        );
    }

    /// A KDC, its configuration and the server's keytab (`zookeeper/127.0.0.1`,
    /// for the acceptor) in this process's environment: in the test's own
    /// process only (`None` in the parent or without a KDC).
    fn kerberos(test: &str) -> Option<zk_testing::kdc::Kdc> {
        if !zk_testing::kdc::available_or_skip(test) || zk_testing::support::in_own_process(test) {
            return None;
        }
        let kdc = zk_testing::kdc::Kdc::start().unwrap();
        kdc.set_process_env(None);
        std::env::set_var("KRB5_KTNAME", kdc.server_keytab("127.0.0.1"));
        Some(kdc)
    }

    fn client(kdc: &zk_testing::kdc::Kdc, mutual: bool) -> Gssapi {
        let mut plan = Plan::new(
            &GssapiConfig::default().keytab(kdc.client_keytab(), CLIENT),
            "127.0.0.1",
        )
        .unwrap();
        if !mutual {
            plan.flags.remove(CtxFlags::GSS_C_MUTUAL_FLAG);
        }
        Gssapi {
            waiters: Arc::default(),
            plan,
            stage: Stage::Start,
            deadline: None,
        }
    }

    fn send(step: Result<Step, SaslError>) -> Vec<u8> {
        match step {
            Ok(Step::Send(t)) => t,
            other => panic!("{other:?}"),
        }
    }

    /// The server's side up to its security-layer offer `layers`, wrapped.
    fn established(m: &mut Gssapi, layers: u8) -> (ServerCtx, Vec<u8>) {
        let mut server = ServerCtx::new(None);
        let ap_req = m.initial().unwrap();
        let ap_rep = server.step(&ap_req, None).unwrap();
        assert!(server.is_complete());
        if let Some(ap_rep) = ap_rep {
            // The mutual round: the client answers with an empty token.
            assert!(send(m.step(Some(&ap_rep))).is_empty());
        }
        let offer = server.wrap(false, &[layers, 0, 0x10, 0]).unwrap().to_vec();
        (server, offer)
    }

    #[test]
    fn a_whole_exchange_with_and_without_mutual_authentication() {
        let name = "client::sasl::gssapi::tests::a_whole_exchange_with_and_without_mutual_authentication";
        let Some(kdc) = kerberos(name) else { return };
        for mutual in [true, false] {
            let mut m = client(&kdc, mutual);
            let (mut server, offer) = established(&mut m, 0x07);
            let answer = send(m.step(Some(&offer)));
            let plain = server.unwrap(&answer).unwrap();
            assert_eq!(&plain[..4], &[1, 0, 0, 0], "layer none, no buffer");
            assert_eq!(&plain[4..], CLIENT.as_bytes(), "the authzid");
            assert_eq!(server.source_name().unwrap().to_string(), CLIENT);
            assert!(matches!(m.step(None), Ok(Step::Done)));
        }
    }

    #[test]
    fn server_tokens_that_do_not_fit_are_protocol_errors() {
        let name = "client::sasl::gssapi::tests::server_tokens_that_do_not_fit_are_protocol_errors";
        let Some(kdc) = kerberos(name) else { return };
        // Garbage, or nothing, for the AP-REP.
        for reply in [Some(&b"\x60\x03garbage"[..]), None] {
            let mut m = client(&kdc, true);
            m.initial().unwrap();
            assert_eq!(m.step(reply).unwrap_err().kind(), SaslErrorKind::Protocol);
        }
        // An offer without layer "none"; one not wrapped; one of 3 bytes.
        let mut m = client(&kdc, true);
        let (_, offer) = established(&mut m, 0x06);
        let e = m.step(Some(&offer)).unwrap_err();
        assert_eq!(e.kind(), SaslErrorKind::Protocol);
        assert!(e.message().contains("0x06"), "{e}");
        let mut m = client(&kdc, true);
        established(&mut m, 0x01);
        assert_eq!(m.step(Some(&[1, 0, 0, 0])).unwrap_err().kind(), SaslErrorKind::Protocol);
        let mut m = client(&kdc, true);
        let (mut server, _) = established(&mut m, 0x01);
        let short = server.wrap(false, &[1, 0, 0]).unwrap().to_vec();
        assert_eq!(m.step(Some(&short)).unwrap_err().kind(), SaslErrorKind::Protocol);
        // A token where the final null one belongs.
        let mut m = client(&kdc, true);
        let (_, offer) = established(&mut m, 0x01);
        send(m.step(Some(&offer)));
        assert_eq!(m.step(Some(b"late")).unwrap_err().kind(), SaslErrorKind::Protocol);
    }
}
