//! addauth (`digest`, `ip`, and `x509` when registered) and whoAmI.

use zk_proto::jute::Reader;
use zk_proto::{AuthPacket, ClientInfo, Decode, Encode, ErrorCode, Id, WhoAmIResponse};

use super::Outcome;
use crate::embedded::conn::ConnId;
use crate::embedded::state::State;

impl State {
    pub(super) fn op_auth(&mut self, cid: ConnId, r: &mut Reader<'_>) -> Outcome {
        let ok = match AuthPacket::decode(r) {
            Ok(p) => match p.scheme.as_str() {
                "digest" => {
                    let id = Id {
                        scheme: "digest".into(),
                        id: zk_proto::digest::digest_id(&String::from_utf8_lossy(&p.auth)),
                    };
                    // DigestAuthenticationProvider: the super user first, then the digest id.
                    let mut new = Vec::with_capacity(2);
                    if self.cfg.super_digest.as_deref() == Some(id.id.as_str()) {
                        new.push(Id {
                            scheme: "super".into(),
                            id: String::new(),
                        });
                    }
                    new.push(id);
                    if let Some(e) = self.conns.get_mut(&cid) {
                        for id in new {
                            if !e.ids.contains(&id) {
                                e.ids.push(id);
                            }
                        }
                    }
                    true
                }
                "ip" => true,
                // X509AuthenticationProvider: the identity comes from the client
                // certificate the TLS listener verified, never from the packet.
                "x509" if self.cfg.x509_auth => self.ids(cid).iter().any(|i| i.scheme == "x509"),
                _ => false,
            },
            Err(_) => false,
        };
        if ok {
            Outcome::ok(0, Vec::new())
        } else {
            Outcome::err(0, ErrorCode::AuthFailed).closing()
        }
    }

    pub(super) fn op_who_am_i(&mut self, cid: ConnId) -> Outcome {
        let client_info = self
            .ids(cid)
            .iter()
            .map(|id| ClientInfo {
                auth_scheme: id.scheme.clone(),
                user: if id.scheme == "digest" {
                    id.id.split(':').next().unwrap_or("").to_string()
                } else {
                    id.id.clone()
                },
            })
            .collect();
        Outcome::ok(self.zxid, WhoAmIResponse { client_info }.to_bytes())
    }
}
