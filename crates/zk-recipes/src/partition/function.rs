//! The partition function: kazoo's default ([`default_partition`]) or a
//! user's, and the one rule that checks what it returns ([`assign`]): every
//! member's share computed by every member, each item in the set, no item
//! in two shares, no panic let out. Pure, table-tested.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::partition::state::FailureReason;

/// A partition function: given a member's identifier, every member's
/// identifier (sorted) and the set's items (sorted), that member's share.
/// Kazoo's signature (`partition_func(identifier, members, items)`). It must
/// be deterministic (every member calls it for every member and must get
/// the same answer) and give no item to two members.
///
/// # Examples
///
/// ```
/// use zk_recipes::PartitionFn;
/// // Everything to the first member.
/// let f: PartitionFn = Box::new(|me, members, items| {
///     if members.first().map(String::as_str) == Some(me) { items.to_vec() } else { vec![] }
/// });
/// let members = vec!["a".to_string(), "b".to_string()];
/// assert_eq!(f("a", &members, &["x".to_string()]), ["x"]);
/// assert!(f("b", &members, &["x".to_string()]).is_empty());
/// ```
pub type PartitionFn = Box<dyn Fn(&str, &[String], &[String]) -> Vec<String> + Send + Sync>;

/// Kazoo's default partition function: with `members` and `items` sorted,
/// member `i` of `n` gets `items[i], items[i + n], ...` (Python's
/// `items[i::n]`). A member not in `members` gets nothing.
///
/// # Examples
///
/// ```
/// let members = ["a".to_string(), "b".to_string()];
/// let items: Vec<String> = ["1", "2", "3"].iter().map(|s| s.to_string()).collect();
/// assert_eq!(zk_recipes::default_partition("a", &members, &items), ["1", "3"]);
/// assert_eq!(zk_recipes::default_partition("b", &members, &items), ["2"]);
/// assert!(zk_recipes::default_partition("c", &members, &items).is_empty());
/// ```
pub fn default_partition(me: &str, members: &[String], items: &[String]) -> Vec<String> {
    let mut members: Vec<&String> = members.iter().collect();
    members.sort();
    let mut items: Vec<&String> = items.iter().collect();
    items.sort();
    let Some(i) = members.iter().position(|m| m.as_str() == me) else {
        return Vec::new();
    };
    items.into_iter().skip(i).step_by(members.len()).cloned().collect()
}

/// Every member's share by `f`, checked: `members` and `items` sorted and
/// without duplicates; each share sorted. A panic, an item not in the set,
/// or an item given twice is the [`FailureReason`] the member fails with.
pub(crate) fn assign(
    f: &PartitionFn,
    members: &[String],
    items: &[String],
) -> Result<BTreeMap<String, Vec<String>>, FailureReason> {
    let set: BTreeSet<&str> = items.iter().map(String::as_str).collect();
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    let mut shares = BTreeMap::new();
    for m in members {
        let share =
            catch_unwind(AssertUnwindSafe(|| f(m, members, items))).map_err(|p| FailureReason::FunctionPanicked {
                member: m.clone(),
                message: panic_message(p.as_ref()),
            })?;
        let mut mine: BTreeSet<String> = BTreeSet::new();
        for item in share {
            if !set.contains(item.as_str()) {
                return Err(FailureReason::ForeignItem {
                    member: m.clone(),
                    item,
                });
            }
            if let Some(first) = owner.get(&item) {
                if first != m {
                    return Err(FailureReason::ItemTwice {
                        item,
                        first: first.clone(),
                        second: m.clone(),
                    });
                }
            }
            owner.insert(item.clone(), m.clone());
            mine.insert(item);
        }
        shares.insert(m.clone(), mine.into_iter().collect());
    }
    Ok(shares)
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// Checks an item or an identifier: one node name (not empty, no `/`, not
/// `.` or `..`, no NUL).
pub(crate) fn check_name(what: &str, name: &str) -> Result<(), String> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\0') {
        return Err(format!(
            "a set partitioner's {what} must be one node name, not {name:?}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn default_fn() -> PartitionFn {
        Box::new(default_partition)
    }

    #[test]
    fn kazoo_default_splits_sorted_items_by_sorted_members() {
        type Case<'a> = (&'a [&'a str], &'a [&'a str], &'a [(&'a str, &'a [&'a str])]);
        let cases: &[Case<'_>] = &[
            // A party of one owns everything.
            (&["a"], &["3", "1", "2"], &[("a", &["1", "2", "3"])]),
            // Two: even and odd positions.
            (&["b", "a"], &["1", "2", "3"], &[("a", &["1", "3"]), ("b", &["2"])]),
            // Three (kazoo's expansion: [0], [1], [2]).
            (
                &["a", "b", "c"],
                &["0", "1", "2"],
                &[("a", &["0"]), ("b", &["1"]), ("c", &["2"])],
            ),
            // More members than items.
            (&["a", "b"], &["0"], &[("a", &["0"]), ("b", &[])]),
            // An empty set.
            (&["a", "b"], &[], &[("a", &[]), ("b", &[])]),
        ];
        for (members, items, want) in cases {
            let mut m = s(members);
            m.sort();
            let mut i = s(items);
            i.sort();
            let got = assign(&default_fn(), &m, &i).unwrap();
            for (who, share) in *want {
                assert_eq!(got[*who], s(share), "{members:?} {items:?}: {who}");
            }
            // Disjoint and covering.
            let all: Vec<&String> = got.values().flatten().collect();
            assert_eq!(all.len(), i.len());
        }
    }

    #[test]
    fn a_bad_function_is_a_typed_failure_never_a_panic() {
        let m = s(&["a", "b"]);
        let i = s(&["x", "y"]);
        let panics: PartitionFn = Box::new(|_, _, _| panic!("boom"));
        assert_eq!(
            assign(&panics, &m, &i),
            Err(FailureReason::FunctionPanicked {
                member: "a".into(),
                message: "boom".into()
            })
        );
        let foreign: PartitionFn = Box::new(|me, _, _| if me == "b" { vec!["z".into()] } else { vec![] });
        assert_eq!(
            assign(&foreign, &m, &i),
            Err(FailureReason::ForeignItem {
                member: "b".into(),
                item: "z".into()
            })
        );
        let twice: PartitionFn = Box::new(|_, _, items| items.to_vec());
        assert_eq!(
            assign(&twice, &m, &i),
            Err(FailureReason::ItemTwice {
                item: "x".into(),
                first: "a".into(),
                second: "b".into()
            })
        );
        // One item repeated in one share is one item.
        let repeat: PartitionFn = Box::new(|me, _, _| if me == "a" { s(&["x", "x"]) } else { vec![] });
        assert_eq!(assign(&repeat, &m, &i).unwrap()["a"], s(&["x"]));
    }

    #[test]
    fn names_are_one_node_name() {
        for bad in ["", ".", "..", "a/b", "/", "a\0"] {
            assert!(check_name("item", bad).is_err(), "{bad:?}");
        }
        for good in ["a", "item-1", "x.y", "ü"] {
            assert!(check_name("item", good).is_ok(), "{good:?}");
        }
    }
}
