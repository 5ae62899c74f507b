//! addauth (`digest`, `ip`, and `x509` when registered), SASL DIGEST-MD5
//! (opcode 102, when configured) and whoAmI.

use zk_proto::jute::Reader;
use zk_proto::sasl::{DigestChallenge, DigestResponse, SaslToken};
use zk_proto::{AuthPacket, ClientInfo, Decode, Encode, ErrorCode, Id, WhoAmIResponse};

use super::Outcome;
use crate::embedded::conn::{ConnId, SaslStage};
use crate::embedded::state::State;

impl State {
    /// Whether SASL is required and this connection has not authenticated.
    pub(super) fn sasl_refuses(&self, cid: ConnId) -> bool {
        self.cfg.sasl.as_ref().is_some_and(|s| s.required)
            && self.conns.get(&cid).is_some_and(|e| e.sasl != SaslStage::Done)
    }

    /// `ZooKeeperServer.processSasl` with a DIGEST-MD5 `SaslServer`: the
    /// first token gets the challenge, the response is checked against the
    /// user's password and answered with `rspauth`, and the connection gets
    /// `sasl:<user>`. A failure is -115 (-124 when SASL is required) with a
    /// null token, and the connection is closed. Without SASL configured, a
    /// null token and nothing else (a server without a JAAS section).
    pub(super) fn op_sasl(&mut self, cid: ConnId, r: &mut Reader<'_>) -> Outcome {
        let null = || Option::<Vec<u8>>::None.to_bytes();
        let Some(cfg) = self.cfg.sasl.clone() else {
            return Outcome::ok(0, null());
        };
        let refuse = || {
            let code = if cfg.required {
                ErrorCode::SessionClosedRequireSaslAuth
            } else {
                ErrorCode::AuthFailed
            };
            let mut o = Outcome::err(0, code).closing();
            o.body = null();
            o.body_on_error = true;
            o
        };
        let Ok(token) = SaslToken::decode(r) else {
            return refuse();
        };
        let token = token.token.unwrap_or_default();
        let Some(entry) = self.conns.get_mut(&cid) else {
            return refuse();
        };
        match std::mem::replace(&mut entry.sasl, SaslStage::None) {
            SaslStage::None => {
                // DIGEST-MD5 has no initial response: anything else is another
                // mechanism's token.
                if !token.is_empty() {
                    log::debug!("embedded zk: conn {cid}: a non-empty first SASL token; refusing");
                    return refuse();
                }
                let nonce = uuid::Uuid::new_v4().simple().to_string();
                let challenge = DigestChallenge::server(&nonce);
                entry.sasl = SaslStage::Challenged(nonce);
                Outcome::ok(0, Some(challenge).to_bytes())
            }
            SaslStage::Challenged(nonce) => {
                let verified = DigestResponse::parse(&token).ok().and_then(|resp| {
                    let password = cfg.password(&resp.username)?;
                    let rspauth = resp.verify(password, &nonce)?;
                    Some((resp.username, rspauth))
                });
                let Some((user, rspauth)) = verified else {
                    log::debug!("embedded zk: conn {cid}: SASL DIGEST-MD5 refused");
                    return refuse();
                };
                entry.sasl = SaslStage::Done;
                let mut new = vec![Id {
                    scheme: "sasl".into(),
                    id: user.clone(),
                }];
                if cfg.super_user.as_deref() == Some(user.as_str()) {
                    new.push(Id {
                        scheme: "super".into(),
                        id: String::new(),
                    });
                }
                for id in new {
                    if !entry.ids.contains(&id) {
                        entry.ids.push(id);
                    }
                }
                Outcome::ok(0, Some(rspauth).to_bytes())
            }
            // A SASL token after the exchange ended: Java's SaslServer throws.
            SaslStage::Done => {
                entry.sasl = SaslStage::Done;
                refuse()
            }
        }
    }

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
