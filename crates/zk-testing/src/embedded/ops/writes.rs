//! create (plain, create2, container, TTL), delete, setData, setACL and check: each
//! takes a zxid, decodes its record and runs through [`State::transaction`].

use zk_proto::jute::Reader;
use zk_proto::{
    Acl, Create2Response, CreateRequestOf, CreateTtlRequestOf, Decode, DeleteRequest, DeleteRequestOf, Encode,
    ErrorCode, OpCode, PathRecord, SetAclRequestOf, SetDataRequestOf,
};

use super::{stat_body, Outcome};
use crate::embedded::conn::ConnId;
use crate::embedded::state::State;
use crate::embedded::tree::{CreateArgs, CreateTxn};

/// A create as the server reads it: null data kept apart from empty.
pub(super) type CreateRequestIn = CreateRequestOf<String, Option<Vec<u8>>, Vec<Acl>>;
/// A createTTL as the server reads it.
pub(super) type CreateTtlRequestIn = CreateTtlRequestOf<String, Option<Vec<u8>>, Vec<Acl>>;

impl CreateArgs {
    /// A create (no TTL) becoming the transaction `txn`.
    pub(super) fn from_create(r: CreateRequestIn, txn: CreateTxn) -> CreateArgs {
        CreateArgs {
            path: r.path,
            data: r.data,
            acl: r.acl,
            flags: r.flags,
            ttl: -1,
            txn,
        }
    }

    /// A createTTL becoming the transaction `txn`.
    pub(super) fn from_create_ttl(r: CreateTtlRequestIn, txn: CreateTxn) -> CreateArgs {
        CreateArgs {
            path: r.path,
            data: r.data,
            acl: r.acl,
            flags: r.flags,
            ttl: r.ttl,
            txn,
        }
    }
}

impl State {
    pub(super) fn op_create(&mut self, cid: ConnId, sid: i64, op: OpCode, r: &mut Reader<'_>) -> Outcome {
        self.zxid += 1;
        let zxid = self.zxid;
        let decoded = match op {
            OpCode::CreateTtl => CreateTtlRequestIn::decode(r).map(|c| CreateArgs::from_create_ttl(c, CreateTxn::Ttl)),
            OpCode::CreateContainer => {
                CreateRequestIn::decode(r).map(|c| CreateArgs::from_create(c, CreateTxn::Container))
            }
            _ => CreateRequestIn::decode(r).map(|c| CreateArgs::from_create(c, CreateTxn::Plain)),
        };
        let Ok(args) = decoded else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        let res = self.transaction(cid, sid, zxid, |tree, ctx, trig| tree.create(ctx, &args, None, trig));
        Outcome::result(
            zxid,
            res.map(|(path, stat, _)| {
                if op == OpCode::Create {
                    PathRecord { path }.to_bytes()
                } else {
                    Create2Response { path, stat }.to_bytes()
                }
            }),
        )
    }

    pub(super) fn op_delete(&mut self, cid: ConnId, sid: i64, r: &mut Reader<'_>) -> Outcome {
        self.zxid += 1;
        let zxid = self.zxid;
        let Ok(req) = DeleteRequest::decode(r) else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        let res = self.transaction(cid, sid, zxid, |tree, ctx, trig| {
            tree.delete(ctx, &req.path, req.version, None, trig)
        });
        Outcome::result(zxid, res.map(|_| Vec::new()))
    }

    /// setData, setACL and check validate the path first, so a null path is
    /// BadArguments there, not MarshallingError.
    pub(super) fn op_set_data(&mut self, cid: ConnId, sid: i64, r: &mut Reader<'_>) -> Outcome {
        self.zxid += 1;
        let zxid = self.zxid;
        let Ok(req) = SetDataRequestOf::<Option<String>, Option<Vec<u8>>>::decode(r) else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        let Some(path) = req.path else {
            return Outcome::err(zxid, ErrorCode::BadArguments);
        };
        let res = self.transaction(cid, sid, zxid, |tree, ctx, trig| {
            tree.set_data(ctx, &path, req.data, req.version, None, trig)
        });
        Outcome::result(zxid, res.map(stat_body))
    }

    pub(super) fn op_set_acl(&mut self, cid: ConnId, sid: i64, r: &mut Reader<'_>) -> Outcome {
        self.zxid += 1;
        let zxid = self.zxid;
        let Ok(req) = SetAclRequestOf::<Option<String>, Vec<Acl>>::decode(r) else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        let Some(path) = req.path else {
            return Outcome::err(zxid, ErrorCode::BadArguments);
        };
        let res = self.transaction(cid, sid, zxid, |tree, ctx, _| {
            tree.set_acl(ctx, &path, &req.acl, req.version)
        });
        Outcome::result(zxid, res.map(stat_body))
    }

    pub(super) fn op_check(&mut self, cid: ConnId, sid: i64, r: &mut Reader<'_>) -> Outcome {
        self.zxid += 1;
        let zxid = self.zxid;
        let Ok(req) = DeleteRequestOf::<Option<String>>::decode(r) else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        let Some(path) = req.path else {
            return Outcome::err(zxid, ErrorCode::BadArguments);
        };
        let res = self.transaction(cid, sid, zxid, |tree, ctx, _| tree.check(ctx, &path, req.version));
        Outcome::result(zxid, res.map(|_| Vec::new()))
    }
}
