//! SetWatches / SetWatches2 (re-registration after a reconnect), checkWatches,
//! removeWatches and addWatch (persistent and recursive watches).

use std::collections::BTreeSet;

use zk_proto::jute::Reader;
use zk_proto::{
    add_watch_mode, watcher_type, AddWatchRequestOf, Decode, Encode, ErrorCode, ErrorResponse, EventType, SetWatches,
    SetWatches2, WatchTypeRequest,
};

use super::Outcome;
use crate::embedded::conn::ConnId;
use crate::embedded::state::State;
use crate::embedded::watch::Mode;

impl State {
    pub(super) fn op_set_watches(&mut self, cid: ConnId, r: &mut Reader<'_>, v2: bool) -> Outcome {
        let zxid = self.zxid;
        let sw = if v2 {
            SetWatches2::decode(r)
        } else {
            SetWatches::decode(r).map(|s| SetWatches2 {
                relative_zxid: s.relative_zxid,
                data_watches: s.data_watches,
                exist_watches: s.exist_watches,
                child_watches: s.child_watches,
                persistent_watches: Vec::new(),
                persistent_recursive_watches: Vec::new(),
            })
        };
        let Ok(sw) = sw else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        let rel = sw.relative_zxid;
        let me = BTreeSet::from([cid]);
        for p in &sw.data_watches {
            match self.tree.get(p).map(|n| n.mzxid) {
                None => self.notify(p, EventType::NodeDeleted, &me),
                Some(m) if m > rel => self.notify(p, EventType::NodeDataChanged, &me),
                Some(_) => self.watches.data.add(p, cid, Mode::Standard),
            }
        }
        for p in &sw.exist_watches {
            if self.tree.get(p).is_some() {
                self.notify(p, EventType::NodeCreated, &me);
            } else {
                self.watches.data.add(p, cid, Mode::Standard);
            }
        }
        for p in &sw.child_watches {
            match self.tree.get(p).map(|n| n.pzxid) {
                None => self.notify(p, EventType::NodeDeleted, &me),
                Some(z) if z > rel => self.notify(p, EventType::NodeChildrenChanged, &me),
                Some(_) => self.watches.child.add(p, cid, Mode::Standard),
            }
        }
        for (paths, mode) in [
            (&sw.persistent_watches, Mode::Persistent),
            (&sw.persistent_recursive_watches, Mode::Recursive),
        ] {
            for p in paths {
                self.watches.data.add(p, cid, mode);
                self.watches.child.add(p, cid, mode);
            }
        }
        Outcome::ok(zxid, Vec::new())
    }

    pub(super) fn op_watch_type(&mut self, cid: ConnId, r: &mut Reader<'_>, remove: bool) -> Outcome {
        let zxid = self.zxid;
        let Ok(req) = WatchTypeRequest::decode(r) else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        let (data, child) = match req.watcher_type {
            watcher_type::CHILDREN => (false, true),
            watcher_type::DATA => (true, false),
            watcher_type::ANY => (true, true),
            _ => return Outcome::err(zxid, ErrorCode::MarshallingError),
        };
        let found = if remove {
            let d = data && self.watches.data.remove(&req.path, cid);
            let c = child && self.watches.child.remove(&req.path, cid);
            d || c
        } else {
            // As 3.8: true when any connection watches the path there
            // (`WatchManager.containsWatcher`), not only this one.
            (data && self.watches.data.watched(&req.path)) || (child && self.watches.child.watched(&req.path))
        };
        if found {
            Outcome::ok(zxid, Vec::new())
        } else {
            Outcome::err(zxid, ErrorCode::NoWatcher)
        }
    }

    pub(super) fn op_add_watch(&mut self, cid: ConnId, r: &mut Reader<'_>) -> Outcome {
        let zxid = self.zxid;
        let Ok(req) = AddWatchRequestOf::<Option<String>>::decode(r) else {
            return Outcome::err(zxid, ErrorCode::MarshallingError);
        };
        let mode = match req.mode {
            add_watch_mode::PERSISTENT => Mode::Persistent,
            add_watch_mode::PERSISTENT_RECURSIVE => Mode::Recursive,
            _ => return Outcome::err(zxid, ErrorCode::MarshallingError),
        };
        if let Some(path) = req.path {
            self.watches.data.add(&path, cid, mode);
            self.watches.child.add(&path, cid, mode);
        }
        Outcome::ok(zxid, ErrorResponse { err: 0 }.to_bytes())
    }
}
