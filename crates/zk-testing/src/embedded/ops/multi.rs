//! multi (all or nothing, with an undo log) and multiRead, on the multi records of
//! `zk-proto` in their nullable form.

use zk_proto::jute::Reader;
use zk_proto::{perms, Decode, Encode, ErrorCode, MultiOpOf, MultiRequestOf, MultiResponseOf, MultiResultOf};

use super::Outcome;
use crate::embedded::conn::ConnId;
use crate::embedded::state::State;
use crate::embedded::tree::{check_acl, CreateArgs, CreateTxn, Ctx, DataTree, Trigger, Undo};

/// A multi or multiRead request as the server reads it: null data kept.
type MultiRequest = MultiRequestOf<Option<Vec<u8>>>;
/// One op of a multi as the server reads it.
type MultiOp = MultiOpOf<Option<Vec<u8>>>;
/// One result of a multi as the server writes it: null data kept.
type MultiResult = MultiResultOf<Option<Vec<u8>>>;
/// The body of a multi or multiRead reply.
type MultiResponse = MultiResponseOf<Option<Vec<u8>>>;

fn is_read(op: &MultiOp) -> bool {
    matches!(op, MultiOpOf::GetData(_) | MultiOpOf::GetChildren(_))
}

/// One create of a multi: a container or TTL node answers like create2.
fn create(
    tree: &mut DataTree,
    ctx: &Ctx<'_>,
    args: &CreateArgs,
    undo: &mut Vec<Undo>,
    trig: &mut Vec<Trigger>,
) -> Result<MultiResult, ErrorCode> {
    tree.create(ctx, args, Some(undo), trig).map(|(path, stat, mode)| {
        if mode.is_container() || mode.is_ttl() {
            MultiResultOf::Create2 { path, stat }
        } else {
            MultiResultOf::Create { path }
        }
    })
}

impl State {
    pub(super) fn op_multi(&mut self, cid: ConnId, sid: i64, r: &mut Reader<'_>) -> Outcome {
        self.zxid += 1;
        let zxid = self.zxid;
        let ops = match MultiRequest::decode(r) {
            Ok(req) if !req.ops.iter().any(is_read) => req.ops,
            _ => return Outcome::err(zxid, ErrorCode::MarshallingError),
        };
        let n = ops.len();
        let res = self.transaction(cid, sid, zxid, |tree, ctx, trig| {
            let mut undo: Vec<Undo> = Vec::new();
            let mut results = Vec::with_capacity(n);
            for (i, op) in ops.into_iter().enumerate() {
                let res = match op {
                    // Inside a multi the flags decide the kind of node.
                    MultiOpOf::Create { request, .. } => {
                        let args = CreateArgs::from_create(request, CreateTxn::ByFlags);
                        create(tree, ctx, &args, &mut undo, trig)
                    }
                    MultiOpOf::CreateTtl(request) => {
                        let args = CreateArgs::from_create_ttl(request, CreateTxn::ByFlags);
                        create(tree, ctx, &args, &mut undo, trig)
                    }
                    MultiOpOf::Delete(d) => tree
                        .delete(ctx, &d.path, d.version, Some(&mut undo), trig)
                        .map(|_| MultiResultOf::Delete),
                    MultiOpOf::SetData(s) => tree
                        .set_data(ctx, &s.path, s.data, s.version, Some(&mut undo), trig)
                        .map(|stat| MultiResultOf::SetData { stat }),
                    MultiOpOf::Check(c) => tree.check(ctx, &c.path, c.version).map(|_| MultiResultOf::Check),
                    MultiOpOf::GetData(_) | MultiOpOf::GetChildren(_) => Err(ErrorCode::MarshallingError),
                };
                match res {
                    Ok(x) => results.push(x),
                    Err(e) => {
                        tree.rollback(undo);
                        return Err((i, e));
                    }
                }
            }
            Ok(results)
        });
        let results: Vec<MultiResult> = match res {
            Ok(results) => results,
            Err((k, e)) => (0..n)
                .map(|j| MultiResultOf::Error {
                    err: match j.cmp(&k) {
                        std::cmp::Ordering::Less => 0,
                        std::cmp::Ordering::Equal => e.code(),
                        std::cmp::Ordering::Greater => ErrorCode::RuntimeInconsistency.code(),
                    },
                })
                .collect(),
        };
        Outcome::ok(zxid, MultiResponse { results }.to_bytes())
    }

    pub(super) fn op_multi_read(&mut self, cid: ConnId, r: &mut Reader<'_>) -> Outcome {
        let zxid = self.zxid;
        let ops = match MultiRequest::decode(r) {
            Ok(req) if req.ops.iter().all(is_read) => req.ops,
            _ => {
                let mut out = Outcome::err(zxid, ErrorCode::MarshallingError);
                out.body = MultiResponse::default().to_bytes();
                out.body_on_error = true;
                return out;
            }
        };
        let ids = self.ids(cid);
        let results: Vec<MultiResult> = ops
            .iter()
            .map(|op| {
                let (MultiOpOf::GetData(req) | MultiOpOf::GetChildren(req)) = op else {
                    return MultiResultOf::Error {
                        err: ErrorCode::MarshallingError.code(),
                    };
                };
                match self.tree.get(&req.path) {
                    None => MultiResultOf::Error {
                        err: ErrorCode::NoNode.code(),
                    },
                    Some(n) if !check_acl(&n.acl, perms::READ, ids) => MultiResultOf::Error {
                        err: ErrorCode::NoAuth.code(),
                    },
                    Some(n) => match op {
                        MultiOpOf::GetData(_) => MultiResultOf::GetData {
                            data: n.data.clone(),
                            stat: n.stat(),
                        },
                        _ => MultiResultOf::GetChildren {
                            children: n.children.iter().cloned().collect(),
                        },
                    },
                }
            })
            .collect();
        Outcome::ok(zxid, MultiResponse { results }.to_bytes())
    }
}
