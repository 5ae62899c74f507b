//! exists, getData, getChildren(2), getACL, getEphemerals and getAllChildrenNumber:
//! no zxid taken; a watch is left where asked.

use zk_proto::jute::Reader;
use zk_proto::{
    perms, Acl, Decode, Encode, ErrorCode, GetAclResponse, GetAllChildrenNumberResponse, GetChildren2ResponseOf,
    GetChildrenResponseOf, GetDataResponseOf, GetEphemeralsResponse, Id, OpCode, PathRecord, PathRecordOf,
    PathWatchRequest,
};

use super::{stat_body, Outcome};
use crate::embedded::conn::ConnId;
use crate::embedded::state::State;
use crate::embedded::tree::check_acl;
use crate::embedded::watch::Mode;

impl State {
    pub(super) fn op_exists(&mut self, cid: ConnId, r: &mut Reader<'_>) -> Outcome {
        let zxid = self.zxid;
        let Ok(req) = PathWatchRequest::decode(r) else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        if req.path.contains('\0') {
            return Outcome::err(zxid, ErrorCode::BadArguments);
        }
        if req.watch {
            self.watches.data.add(&req.path, cid, Mode::Standard);
        }
        match self.tree.get(&req.path) {
            Some(n) => Outcome::ok(zxid, stat_body(n.stat())),
            None => Outcome::err(zxid, ErrorCode::NoNode),
        }
    }

    pub(super) fn op_get_data(&mut self, cid: ConnId, r: &mut Reader<'_>) -> Outcome {
        let zxid = self.zxid;
        let Ok(req) = PathWatchRequest::decode(r) else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        let body = match self.tree.get(&req.path) {
            None => return Outcome::err(zxid, ErrorCode::NoNode),
            Some(n) if !check_acl(&n.acl, perms::READ, self.ids(cid)) => return Outcome::err(zxid, ErrorCode::NoAuth),
            Some(n) => {
                let mut b = Vec::with_capacity(n.data_bytes().len() + 72);
                GetDataResponseOf {
                    data: n.data.as_deref(),
                    stat: n.stat(),
                }
                .encode(&mut b);
                b
            }
        };
        if req.watch {
            self.watches.data.add(&req.path, cid, Mode::Standard);
        }
        Outcome::ok(zxid, body)
    }

    pub(super) fn op_get_children(&mut self, cid: ConnId, op: OpCode, r: &mut Reader<'_>) -> Outcome {
        let zxid = self.zxid;
        let Ok(req) = PathWatchRequest::decode(r) else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        let body = match self.tree.get(&req.path) {
            None => return Outcome::err(zxid, ErrorCode::NoNode),
            Some(n) if !check_acl(&n.acl, perms::READ, self.ids(cid)) => return Outcome::err(zxid, ErrorCode::NoAuth),
            Some(n) => {
                let mut b = Vec::with_capacity(16 + n.children.len() * 24);
                let children: Vec<&str> = n.children.iter().map(String::as_str).collect();
                if op == OpCode::GetChildren2 {
                    GetChildren2ResponseOf {
                        children,
                        stat: n.stat(),
                    }
                    .encode(&mut b);
                } else {
                    GetChildrenResponseOf { children }.encode(&mut b);
                }
                b
            }
        };
        if req.watch {
            self.watches.child.add(&req.path, cid, Mode::Standard);
        }
        Outcome::ok(zxid, body)
    }

    pub(super) fn op_get_acl(&mut self, cid: ConnId, r: &mut Reader<'_>) -> Outcome {
        let zxid = self.zxid;
        let Ok(req) = PathRecord::decode(r) else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        let ids = self.ids(cid);
        let Some(n) = self.tree.get(&req.path) else {
            return Outcome::err(zxid, ErrorCode::NoNode);
        };
        if !check_acl(&n.acl, perms::READ | perms::ADMIN, ids) {
            return Outcome::err(zxid, ErrorCode::NoAuth);
        }
        // Without ADMIN, digest ids are shown with their hash masked.
        let admin = check_acl(&n.acl, perms::ADMIN, ids);
        let acl: Vec<Acl> = n
            .acl
            .iter()
            .map(|a| {
                if !admin && a.id.scheme == "digest" {
                    let user = a.id.id.split(':').next().unwrap_or("");
                    Acl {
                        perms: a.perms,
                        id: Id {
                            scheme: a.id.scheme.clone(),
                            id: format!("{user}:x"),
                        },
                    }
                } else {
                    a.clone()
                }
            })
            .collect();
        Outcome::ok(zxid, GetAclResponse { acl, stat: n.stat() }.to_bytes())
    }

    pub(super) fn op_get_ephemerals(&mut self, sid: i64, r: &mut Reader<'_>) -> Outcome {
        let zxid = self.zxid;
        let Ok(PathRecordOf { path: prefix }) = PathRecordOf::<Option<String>>::decode(r) else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        let all = matches!(prefix.as_deref().map(str::trim), None | Some("" | "/"));
        let prefix = prefix.unwrap_or_default();
        let ephemerals: Vec<String> = self
            .tree
            .ephemerals
            .get(&sid)
            .map(|set| set.iter().filter(|p| all || p.starts_with(&prefix)).cloned().collect())
            .unwrap_or_default();
        Outcome::ok(zxid, GetEphemeralsResponse { ephemerals }.to_bytes())
    }

    pub(super) fn op_all_children(&mut self, cid: ConnId, r: &mut Reader<'_>) -> Outcome {
        let zxid = self.zxid;
        let Ok(req) = PathRecord::decode(r) else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        match self.tree.get(&req.path) {
            None => Outcome::err(zxid, ErrorCode::NoNode),
            Some(n) if !check_acl(&n.acl, perms::READ, self.ids(cid)) => Outcome::err(zxid, ErrorCode::NoAuth),
            Some(_) => {
                let total_number = self.tree.descendants(&req.path) as i32;
                Outcome::ok(zxid, GetAllChildrenNumberResponse { total_number }.to_bytes())
            }
        }
    }
}
