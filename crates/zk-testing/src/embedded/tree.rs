//! The data tree: nodes, per-node creation counters, ephemerals per session, the
//! check order of every write and an undo log for multi.

use std::collections::{BTreeSet, HashMap};

use zk_proto::path::validate_path;
use zk_proto::{perms, Acl, CreateMode, ErrorCode, Id, Stat};

use super::util;

/// The largest TTL the server accepts (`EphemeralType.TTL` max value, 2^40 - 1 ms).
pub(crate) const MAX_TTL: i64 = (1 << 40) - 1;

/// What kind of node this is; the internal `ephemeralOwner`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NodeKind {
    Persistent,
    Ephemeral(i64),
    Container,
    Ttl(i64),
}

#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub data: Option<Vec<u8>>,
    pub acl: Vec<Acl>,
    pub czxid: i64,
    pub mzxid: i64,
    pub ctime: i64,
    pub mtime: i64,
    pub version: i32,
    /// The creation counter (`StatPersisted.cversion`): the sequence suffix source.
    pub cc: i32,
    pub aversion: i32,
    pub kind: NodeKind,
    pub pzxid: i64,
    pub children: BTreeSet<String>,
}

impl Node {
    fn new(data: Option<Vec<u8>>, acl: Vec<Acl>, zxid: i64, now: i64, kind: NodeKind) -> Node {
        Node {
            data,
            acl,
            czxid: zxid,
            mzxid: zxid,
            ctime: now,
            mtime: now,
            version: 0,
            cc: 0,
            aversion: 0,
            kind,
            pzxid: zxid,
            children: BTreeSet::new(),
        }
    }

    /// The Stat as clients see it (`DataNode.copyStat`).
    pub fn stat(&self) -> Stat {
        let n = self.children.len() as i32;
        Stat {
            czxid: self.czxid,
            mzxid: self.mzxid,
            ctime: self.ctime,
            mtime: self.mtime,
            version: self.version,
            cversion: self.cc.wrapping_mul(2).wrapping_sub(n),
            aversion: self.aversion,
            ephemeral_owner: match self.kind {
                NodeKind::Ephemeral(s) => s,
                _ => 0,
            },
            data_length: self.data.as_ref().map_or(0, |d| d.len() as i32),
            num_children: n,
            pzxid: self.pzxid,
        }
    }

    pub fn data_bytes(&self) -> &[u8] {
        self.data.as_deref().unwrap_or(&[])
    }
}

/// A change that fires watches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Trigger {
    Created(String),
    Deleted(String),
    DataChanged(String),
    ChildrenChanged(String),
}

/// One step of the undo log of a multi.
#[derive(Debug)]
pub(crate) enum Undo {
    Created {
        path: String,
        parent: String,
        parent_cc: i32,
        parent_pzxid: i64,
    },
    Deleted {
        path: String,
        node: Node,
        parent: String,
        parent_pzxid: i64,
    },
    DataSet {
        path: String,
        data: Option<Vec<u8>>,
        version: i32,
        mzxid: i64,
        mtime: i64,
    },
}

/// Everything a write needs to know about the transaction and the caller.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ctx<'a> {
    pub zxid: i64,
    /// Wall clock, ms since the epoch (one value per request).
    pub now: i64,
    pub session: i64,
    pub ids: &'a [Id],
    pub extended_types: bool,
    /// Whether the `x509` scheme is registered ([`crate::embedded::ServerConfig::x509_auth`]).
    pub x509: bool,
    /// Whether the `sasl` scheme is registered ([`crate::embedded::ServerConfig::sasl`]).
    pub sasl: bool,
}

/// Which transaction a create becomes (`PrepRequestProcessor.pRequest2TxnCreate`): the
/// flags give the checks, the sequence suffix and ephemerality, but outside a multi the
/// *opcode* picks the transaction type, hence what kind of node is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CreateTxn {
    /// Opcode 1 or 15: a `CreateTxn`; the container flag (4) makes a plain persistent
    /// node that is never reaped (what real 3.8 does).
    Plain,
    /// Opcode 19: a container, whatever the flags.
    Container,
    /// Opcode 21: a TTL node.
    Ttl,
    /// Inside a multi the server rebuilds each op from its flags: 4 → container,
    /// 5/6 → TTL.
    ByFlags,
}

/// A create request, whatever opcode carried it.
#[derive(Debug, Clone)]
pub(crate) struct CreateArgs {
    pub path: String,
    pub data: Option<Vec<u8>>,
    pub acl: Vec<Acl>,
    pub flags: i32,
    /// -1 unless the request was a createTTL.
    pub ttl: i64,
    /// The transaction type.
    pub txn: CreateTxn,
}

/// The parent path of `path` as the server computes it: the text before the last '/',
/// with "" meaning the root. `None` when there is no '/'.
pub(crate) fn parent_of(path: &str) -> Option<&str> {
    let i = path.rfind('/')?;
    Some(if i == 0 { "/" } else { &path[..i] })
}

fn is_special(path: &str) -> bool {
    matches!(path, "/" | "/zookeeper" | "/zookeeper/quota" | "/zookeeper/config")
}

fn world_anyone(id: &Id) -> bool {
    id.scheme == "world" && id.id == "anyone"
}

/// `ZooKeeperServer.checkACL`: an empty ACL allows everything; otherwise some entry with
/// an overlapping perm bit must be `world:anyone` or match one of the caller's ids.
pub(crate) fn check_acl(acl: &[Acl], perm: i32, ids: &[Id]) -> bool {
    if acl.is_empty() || ids.iter().any(|i| i.scheme == "super") {
        return true;
    }
    acl.iter().filter(|a| a.perms & perm != 0).any(|a| {
        world_anyone(&a.id)
            || ids.iter().any(|i| {
                i.scheme == a.id.scheme
                    && match i.scheme.as_str() {
                        "ip" => util::ip_matches(&i.id, &a.id.id),
                        _ => i.id == a.id.id,
                    }
            })
    })
}

/// The length of Java's `s.split(sep)`: trailing empty strings are dropped
/// (`DigestAuthenticationProvider.isValid` counts them that way: `"u:"` is one
/// part, `"u:h:"` two).
fn java_split_len(s: &str, sep: char) -> usize {
    let parts: Vec<&str> = s.split(sep).collect();
    let trailing_empty = parts.iter().rev().take_while(|p| p.is_empty()).count();
    // Java returns [""] for an empty string.
    (parts.len() - trailing_empty).max(usize::from(s.is_empty()))
}

/// Whether `name` parses as Java's `KerberosName`: a name with `@` must be
/// `primary[/instance]@REALM` (none of the parts holding `/` or `@`); a name
/// without `@` is a simple name.
fn valid_kerberos_name(name: &str) -> bool {
    match name.split_once('@') {
        None => true,
        Some((principal, realm)) => {
            !realm.contains(['@', '/'])
                && match principal.split_once('/') {
                    None => true,
                    Some((_, instance)) => !instance.contains('/'),
                }
        }
    }
}

/// `PrepRequestProcessor.fixupACL`: de-duplicates, expands `auth`, validates ids.
pub(crate) fn fixup_acl(acl: &[Acl], ids: &[Id], x509: bool, sasl: bool) -> Result<Vec<Acl>, ErrorCode> {
    let mut uniq: Vec<&Acl> = Vec::with_capacity(acl.len());
    for a in acl {
        if !uniq.contains(&a) {
            uniq.push(a);
        }
    }
    if uniq.is_empty() {
        return Err(ErrorCode::InvalidAcl);
    }
    let mut out = Vec::with_capacity(uniq.len());
    for a in uniq {
        match a.id.scheme.as_str() {
            _ if world_anyone(&a.id) => out.push(a.clone()),
            "auth" => {
                let mut any = false;
                // Ids of providers that say isAuthenticated (digest, x509); `ip`
                // does not, and `super` has no provider.
                for id in ids.iter().filter(|i| i.scheme != "ip" && i.scheme != "super") {
                    any = true;
                    out.push(Acl {
                        perms: a.perms,
                        id: id.clone(),
                    });
                }
                if !any {
                    return Err(ErrorCode::InvalidAcl);
                }
            }
            "digest" if java_split_len(&a.id.id, ':') == 2 => out.push(a.clone()),
            "ip" if util::valid_ip_expr(&a.id.id) => out.push(a.clone()),
            // X509AuthenticationProvider.isValid: `new X500Principal(id)` does not throw.
            "x509" if x509 && zk_proto::x509::valid_id(&a.id.id) => out.push(a.clone()),
            // SASLAuthenticationProvider.isValid: the id parses as a KerberosName.
            "sasl" if sasl && valid_kerberos_name(&a.id.id) => out.push(a.clone()),
            _ => return Err(ErrorCode::InvalidAcl),
        }
    }
    Ok(out)
}

fn check_version(expected: i32, current: i32) -> Result<(), ErrorCode> {
    if expected != -1 && expected != current {
        Err(ErrorCode::BadVersion)
    } else {
        Ok(())
    }
}

/// The data tree.
#[derive(Debug)]
pub(crate) struct DataTree {
    nodes: HashMap<String, Node>,
    /// Session id → its ephemeral paths.
    pub ephemerals: HashMap<i64, BTreeSet<String>>,
}

impl DataTree {
    /// A fresh tree: `/`, `/zookeeper`, `/zookeeper/quota`, `/zookeeper/config` with the
    /// odd counters of a real fresh server.
    pub fn new() -> DataTree {
        let mut nodes = HashMap::new();
        let mk = |acl: Vec<Acl>| Node::new(Some(Vec::new()), acl, 0, 0, NodeKind::Persistent);
        let mut root = mk(Acl::open_unsafe());
        root.children.insert("zookeeper".into());
        let mut zk = mk(Acl::open_unsafe());
        zk.children.insert("quota".into());
        zk.children.insert("config".into());
        let mut config = mk(Acl::read_unsafe());
        config.aversion = -1;
        nodes.insert("/".to_string(), root);
        nodes.insert("/zookeeper".to_string(), zk);
        nodes.insert("/zookeeper/quota".to_string(), mk(Acl::open_unsafe()));
        nodes.insert("/zookeeper/config".to_string(), config);
        DataTree {
            nodes,
            ephemerals: HashMap::new(),
        }
    }

    /// Gives `/zookeeper/config` the data of a quorum peer's first
    /// configuration (`DataTree.addConfigNode` then the leader's
    /// `setData` of it: Stat version -1, mtime `mtime`).
    pub fn set_config_node(&mut self, data: Vec<u8>, mtime: i64) {
        if let Some(n) = self.nodes.get_mut("/zookeeper/config") {
            n.data = Some(data);
            n.version = -1;
            n.mtime = mtime;
        }
    }

    /// Looks a node up the way the server does for reads ("" is the root).
    pub fn get(&self, path: &str) -> Option<&Node> {
        self.nodes.get(if path.is_empty() { "/" } else { path })
    }

    /// Number of nodes (the root once).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Every node, unsorted.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Node)> {
        self.nodes.iter()
    }

    /// Number of descendants of `path` (`getAllChildrenNumber`).
    pub fn descendants(&self, path: &str) -> usize {
        if path == "/" || path.is_empty() {
            return self.nodes.len() - 1;
        }
        let prefix = format!("{path}/");
        self.nodes.keys().filter(|k| k.starts_with(&prefix)).count()
    }

    /// Total bytes of path and data (`zk_approximate_data_size`).
    pub fn approximate_size(&self) -> usize {
        self.nodes.iter().map(|(k, n)| k.len() + n.data_bytes().len()).sum()
    }

    /// Number of ephemeral nodes.
    pub fn ephemeral_count(&self) -> usize {
        self.ephemerals.values().map(BTreeSet::len).sum()
    }

    /// create / create2 / createContainer / createTTL with the real check order.
    /// Returns the actual path, the new Stat and the mode of the stored node.
    pub fn create(
        &mut self,
        ctx: &Ctx<'_>,
        args: &CreateArgs,
        undo: Option<&mut Vec<Undo>>,
        trig: &mut Vec<Trigger>,
    ) -> Result<(String, Stat, CreateMode), ErrorCode> {
        // 1. flags, TTL.
        let mode = CreateMode::from_code(args.flags).ok_or(ErrorCode::BadArguments)?;
        if mode.is_ttl() {
            if !ctx.extended_types {
                return Err(ErrorCode::Unimplemented);
            }
            if args.ttl <= 0 || args.ttl > MAX_TTL {
                return Err(ErrorCode::BadArguments);
            }
        } else if args.ttl >= 0 {
            return Err(ErrorCode::BadArguments);
        }
        // 2. a '/' and no NUL.
        let path = args.path.as_str();
        if path.contains('\0') {
            return Err(ErrorCode::BadArguments);
        }
        let parent_path = parent_of(path).ok_or(ErrorCode::BadArguments)?;
        // 3. ACL.
        let acl = fixup_acl(&args.acl, ctx.ids, ctx.x509, ctx.sasl)?;
        // 4. parent exists; 5. CREATE permission.
        let parent = self.nodes.get(parent_path).ok_or(ErrorCode::NoNode)?;
        if !check_acl(&parent.acl, perms::CREATE, ctx.ids) {
            return Err(ErrorCode::NoAuth);
        }
        // 6. sequence suffix from the parent's creation counter.
        let full = if mode.is_sequential() {
            format!("{path}{:010}", parent.cc)
        } else {
            path.to_string()
        };
        // 7. validation of the final path.
        if validate_path(&full, false).is_err() {
            return Err(ErrorCode::BadArguments);
        }
        // 8. exists; 9. ephemeral parent.
        if self.nodes.contains_key(&full) {
            return Err(ErrorCode::NodeExists);
        }
        if matches!(parent.kind, NodeKind::Ephemeral(_)) {
            return Err(ErrorCode::NoChildrenForEphemerals);
        }
        // 10. apply.
        let kind = match (args.txn, mode) {
            (CreateTxn::Container, _) | (CreateTxn::ByFlags, CreateMode::Container) => NodeKind::Container,
            (CreateTxn::Ttl | CreateTxn::ByFlags, m) if m.is_ttl() => NodeKind::Ttl(args.ttl),
            (_, m) if m.is_ephemeral() => NodeKind::Ephemeral(ctx.session),
            _ => NodeKind::Persistent,
        };
        let parent_path = parent_path.to_string();
        let name = full[full.rfind('/').map_or(0, |i| i + 1)..].to_string();
        let parent = self.nodes.get_mut(&parent_path).expect("parent checked above");
        if let Some(u) = undo {
            u.push(Undo::Created {
                path: full.clone(),
                parent: parent_path.clone(),
                parent_cc: parent.cc,
                parent_pzxid: parent.pzxid,
            });
        }
        parent.cc = parent.cc.wrapping_add(1);
        parent.pzxid = ctx.zxid;
        parent.children.insert(name);
        let node = Node::new(args.data.clone(), acl, ctx.zxid, ctx.now, kind);
        let stat = node.stat();
        self.nodes.insert(full.clone(), node);
        if let NodeKind::Ephemeral(s) = kind {
            self.ephemerals.entry(s).or_default().insert(full.clone());
        }
        trig.push(Trigger::Created(full.clone()));
        trig.push(Trigger::ChildrenChanged(parent_path));
        let mode = match kind {
            NodeKind::Container => CreateMode::Container,
            NodeKind::Ttl(_) if !mode.is_ttl() => CreateMode::PersistentWithTtl,
            NodeKind::Persistent if mode.is_container() => CreateMode::Persistent,
            _ => mode,
        };
        Ok((full, stat, mode))
    }

    /// delete with the real check order.
    pub fn delete(
        &mut self,
        ctx: &Ctx<'_>,
        path: &str,
        version: i32,
        undo: Option<&mut Vec<Undo>>,
        trig: &mut Vec<Trigger>,
    ) -> Result<(), ErrorCode> {
        if path.contains('\0') || is_special(path) {
            return Err(ErrorCode::BadArguments);
        }
        let parent_path = parent_of(path).ok_or(ErrorCode::BadArguments)?;
        let parent = self.nodes.get(parent_path).ok_or(ErrorCode::NoNode)?;
        if !check_acl(&parent.acl, perms::DELETE, ctx.ids) {
            return Err(ErrorCode::NoAuth);
        }
        let node = self.nodes.get(path).ok_or(ErrorCode::NoNode)?;
        check_version(version, node.version)?;
        if !node.children.is_empty() {
            return Err(ErrorCode::NotEmpty);
        }
        let parent_path = parent_path.to_string();
        self.remove_node(path, &parent_path, ctx.zxid, undo, trig);
        Ok(())
    }

    /// Removes a childless node without checks (delete, session close, container sweep).
    fn remove_node(
        &mut self,
        path: &str,
        parent_path: &str,
        zxid: i64,
        undo: Option<&mut Vec<Undo>>,
        trig: &mut Vec<Trigger>,
    ) {
        let Some(node) = self.nodes.remove(path) else { return };
        if let NodeKind::Ephemeral(s) = node.kind {
            if let Some(set) = self.ephemerals.get_mut(&s) {
                set.remove(path);
                if set.is_empty() {
                    self.ephemerals.remove(&s);
                }
            }
        }
        if let Some(parent) = self.nodes.get_mut(parent_path) {
            let name = &path[path.rfind('/').map_or(0, |i| i + 1)..];
            parent.children.remove(name);
            let old_pzxid = parent.pzxid;
            if zxid > parent.pzxid {
                parent.pzxid = zxid;
            }
            if let Some(u) = undo {
                u.push(Undo::Deleted {
                    path: path.to_string(),
                    node,
                    parent: parent_path.to_string(),
                    parent_pzxid: old_pzxid,
                });
            }
        }
        trig.push(Trigger::Deleted(path.to_string()));
        trig.push(Trigger::ChildrenChanged(parent_path.to_string()));
    }

    /// setData with the real check order.
    pub fn set_data(
        &mut self,
        ctx: &Ctx<'_>,
        path: &str,
        data: Option<Vec<u8>>,
        version: i32,
        undo: Option<&mut Vec<Undo>>,
        trig: &mut Vec<Trigger>,
    ) -> Result<Stat, ErrorCode> {
        if validate_path(path, false).is_err() {
            return Err(ErrorCode::BadArguments);
        }
        let node = self.nodes.get_mut(path).ok_or(ErrorCode::NoNode)?;
        if !check_acl(&node.acl, perms::WRITE, ctx.ids) {
            return Err(ErrorCode::NoAuth);
        }
        check_version(version, node.version)?;
        if let Some(u) = undo {
            u.push(Undo::DataSet {
                path: path.to_string(),
                data: node.data.take(),
                version: node.version,
                mzxid: node.mzxid,
                mtime: node.mtime,
            });
        }
        node.data = data;
        node.version = node.version.wrapping_add(1);
        node.mzxid = ctx.zxid;
        node.mtime = ctx.now;
        trig.push(Trigger::DataChanged(path.to_string()));
        Ok(node.stat())
    }

    /// check (version check) with the real check order.
    pub fn check(&self, ctx: &Ctx<'_>, path: &str, version: i32) -> Result<(), ErrorCode> {
        if validate_path(path, false).is_err() {
            return Err(ErrorCode::BadArguments);
        }
        let node = self.nodes.get(path).ok_or(ErrorCode::NoNode)?;
        if !check_acl(&node.acl, perms::READ, ctx.ids) {
            return Err(ErrorCode::NoAuth);
        }
        check_version(version, node.version)
    }

    /// setACL with the real check order.
    pub fn set_acl(&mut self, ctx: &Ctx<'_>, path: &str, acl: &[Acl], version: i32) -> Result<Stat, ErrorCode> {
        if validate_path(path, false).is_err() {
            return Err(ErrorCode::BadArguments);
        }
        let acl = fixup_acl(acl, ctx.ids, ctx.x509, ctx.sasl)?;
        let node = self.nodes.get_mut(path).ok_or(ErrorCode::NoNode)?;
        if !check_acl(&node.acl, perms::ADMIN, ctx.ids) {
            return Err(ErrorCode::NoAuth);
        }
        check_version(version, node.aversion)?;
        node.aversion = node.aversion.wrapping_add(1);
        node.acl = acl;
        Ok(node.stat())
    }

    /// Deletes every ephemeral of `session` in one transaction.
    pub fn kill_session(&mut self, session: i64, zxid: i64, trig: &mut Vec<Trigger>) -> usize {
        let Some(paths) = self.ephemerals.remove(&session) else {
            return 0;
        };
        for p in &paths {
            if let Some(parent) = parent_of(p) {
                let parent = parent.to_string();
                self.remove_node(p, &parent, zxid, None, trig);
            }
        }
        paths.len()
    }

    /// Containers and TTL nodes that the sweep should delete now.
    pub fn sweep_candidates(&self, now_ms: i64) -> Vec<String> {
        let mut v: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, n)| {
                n.children.is_empty()
                    && match n.kind {
                        NodeKind::Container => n.cc != 0,
                        NodeKind::Ttl(ttl) => now_ms - n.mtime > ttl,
                        _ => false,
                    }
            })
            .map(|(p, _)| p.clone())
            .collect();
        v.sort();
        v
    }

    /// Deletes a container or TTL node found by the sweep, if it still qualifies.
    pub fn sweep_delete(&mut self, path: &str, zxid: i64, trig: &mut Vec<Trigger>) -> bool {
        let ok = self
            .nodes
            .get(path)
            .is_some_and(|n| n.children.is_empty() && matches!(n.kind, NodeKind::Container | NodeKind::Ttl(_)));
        if !ok {
            return false;
        }
        match parent_of(path) {
            Some(parent) => {
                let parent = parent.to_string();
                self.remove_node(path, &parent, zxid, None, trig);
                true
            }
            None => false,
        }
    }

    /// Rolls back a failed multi.
    pub fn rollback(&mut self, undo: Vec<Undo>) {
        for u in undo.into_iter().rev() {
            match u {
                Undo::Created {
                    path,
                    parent,
                    parent_cc,
                    parent_pzxid,
                } => {
                    if let Some(node) = self.nodes.remove(&path) {
                        if let NodeKind::Ephemeral(s) = node.kind {
                            if let Some(set) = self.ephemerals.get_mut(&s) {
                                set.remove(&path);
                                if set.is_empty() {
                                    self.ephemerals.remove(&s);
                                }
                            }
                        }
                    }
                    if let Some(p) = self.nodes.get_mut(&parent) {
                        p.children.remove(&path[path.rfind('/').map_or(0, |i| i + 1)..]);
                        p.cc = parent_cc;
                        p.pzxid = parent_pzxid;
                    }
                }
                Undo::Deleted {
                    path,
                    node,
                    parent,
                    parent_pzxid,
                } => {
                    if let NodeKind::Ephemeral(s) = node.kind {
                        self.ephemerals.entry(s).or_default().insert(path.clone());
                    }
                    if let Some(p) = self.nodes.get_mut(&parent) {
                        p.children
                            .insert(path[path.rfind('/').map_or(0, |i| i + 1)..].to_string());
                        p.pzxid = parent_pzxid;
                    }
                    self.nodes.insert(path, node);
                }
                Undo::DataSet {
                    path,
                    data,
                    version,
                    mzxid,
                    mtime,
                } => {
                    if let Some(n) = self.nodes.get_mut(&path) {
                        n.data = data;
                        n.version = version;
                        n.mzxid = mzxid;
                        n.mtime = mtime;
                    }
                }
            }
        }
    }
}
