//! A batch's identity (docs/intake.md IN-2, IN-3): its keys (the delivery ids its META names, else the digest of
//! its inputs), the assignment it coalesces by, and the digests that name its files.

use base::digest::{Sha256, hex};
use serde_json::Value;

use crate::claim::Meta;

/// The longest delivery id taken from META; a longer one is not an id.
pub const DELIVERY_ID_LIMIT: usize = 200;
/// The most ids one batch may name (a coalesced batch of the receiver names one per event).
pub const DELIVERY_IDS_LIMIT: usize = 1000;

/// The delivery ids META names: `"delivery"` (the newest event's, what the receiver passes today when it has one)
/// and every string of `"deliveries"` (all the events of a coalesced batch), in that order, without repeats. An
/// id is 1–200 printable ASCII characters without spaces; anything else is not an id.
pub fn delivery_ids(meta: Option<&str>) -> Vec<String> {
    let Some(Ok(Value::Object(map))) = meta.filter(|m| m.len() <= crate::claim::META_LIMIT).map(serde_json::from_str)
    else {
        return Vec::new();
    };
    let single = map.get("delivery").into_iter();
    let many = map.get("deliveries").and_then(Value::as_array).into_iter().flatten();
    let mut ids: Vec<String> = Vec::new();
    for id in single.chain(many).filter_map(Value::as_str).filter(|id| is_delivery_id(id)) {
        if !ids.iter().any(|known| known == id) && ids.len() < DELIVERY_IDS_LIMIT {
            ids.push(id.to_owned());
        }
    }
    ids
}

fn is_delivery_id(id: &str) -> bool {
    (1..=DELIVERY_ID_LIMIT).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_graphic())
}

/// What a batch without a delivery id is known by: `sha256:` and the digest of everything that makes it the
/// batch it is, each field framed by its length, so a receiver's retry of the same batch has the same key.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    pub source: &'a str,
    pub routing_key: &'a [u8],
    pub event: &'a str,
    pub topic: &'a str,
    pub note: &'a str,
    pub count: &'a str,
    pub meta: Option<&'a str>,
    pub text: &'a str,
}

pub fn input_key(inputs: &Inputs<'_>) -> String {
    let mut hasher = Sha256::new();
    hasher.update_field(b"agent-box intake batch v1");
    for field in [inputs.source.as_bytes(), inputs.routing_key, inputs.event.as_bytes(), inputs.topic.as_bytes()] {
        hasher.update_field(field);
    }
    hasher.update_field(inputs.note.as_bytes());
    hasher.update_field(inputs.count.as_bytes());
    hasher.update_field(inputs.meta.unwrap_or("\u{0}unset").as_bytes());
    hasher.update_field(inputs.text.as_bytes());
    format!("sha256:{}", hex(&hasher.finish()))
}

/// The assignment's object, as the lease's object where it has one: the canonical issue or PR number, else the
/// commit sha.
pub fn object(meta: Option<&Meta>) -> Option<String> {
    let meta = meta?;
    meta.number.map(|n| n.to_string()).or_else(|| meta.sha.clone())
}

/// What batches coalesce by (IN-5): `<source>:<routing key>#<object>` when the batch is claimable and names an
/// object; otherwise the batch is an assignment of its own, `key:<its first key>`.
pub fn assignment(own: &str, seed: bool, object: Option<&str>, first_key: &str) -> String {
    match object.filter(|_| seed) {
        Some(object) => format!("{own}#{object}"),
        None => format!("key:{first_key}"),
    }
}

/// The hex digest that stands for `text` in a file name: the first `len` hex digits of its SHA-256.
pub fn digest_name(text: &str, len: usize) -> String {
    let mut hasher = Sha256::new();
    hasher.update(text.as_bytes());
    let mut digits = hex(&hasher.finish());
    digits.truncate(len);
    digits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivery_ids_from_meta() {
        let id = "72d3162e-cc78-11e3-81ab-4c9367dc0958";
        assert_eq!(delivery_ids(Some(&format!(r#"{{"delivery":"{id}"}}"#))), [id]);
        assert_eq!(
            delivery_ids(Some(&format!(r#"{{"delivery":"{id}","deliveries":["a","{id}","b",7,"c d",""]}}"#))),
            [id, "a", "b"]
        );
        for none in [None, Some(""), Some("{}"), Some("not json"), Some(r#"{"delivery":7}"#), Some("[1]")] {
            assert!(delivery_ids(none).is_empty(), "{none:?}");
        }
        let long = "x".repeat(DELIVERY_ID_LIMIT + 1);
        assert!(delivery_ids(Some(&format!(r#"{{"delivery":"{long}"}}"#))).is_empty());
    }

    // IN-3: a batch names at most 1000 delivery ids; the first 1000 are kept.
    #[test]
    fn in3_a_batch_keeps_at_most_1000_delivery_ids() {
        let ids: Vec<String> = (0..=DELIVERY_IDS_LIMIT).map(|i| format!("id-{i}")).collect();
        let meta = serde_json::json!({ "deliveries": ids }).to_string();
        let kept = delivery_ids(Some(&meta));
        assert_eq!(kept.len(), DELIVERY_IDS_LIMIT);
        assert_eq!(kept.last().map(String::as_str), Some("id-999"));
    }

    // IN-5: the assignment's object is META's canonical number, else its sha, else none.
    #[test]
    fn in5_the_object_is_the_number_else_the_sha() {
        let meta = |raw: &str| crate::claim::parse_meta(Some(raw));
        assert_eq!(object(meta(r#"{"number":"007","sha":"da73cb12"}"#).as_ref()).as_deref(), Some("7"));
        assert_eq!(object(meta(r#"{"sha":"da73cb12"}"#).as_ref()).as_deref(), Some("da73cb12"));
        assert_eq!(object(meta("{}").as_ref()), None);
        assert_eq!(object(None), None);
    }

    #[test]
    fn input_keys_tell_batches_apart() {
        let base = Inputs {
            source: "github",
            routing_key: b"acme/x",
            event: "issues",
            topic: "github:acme/*",
            note: "",
            count: "1",
            meta: None,
            text: "line",
        };
        let key = input_key(&base);
        assert!(key.starts_with("sha256:") && key.len() == 7 + 64);
        assert_eq!(key, input_key(&base), "the same batch, the same key");
        assert_ne!(key, input_key(&Inputs { text: "line2", ..base }));
        assert_ne!(key, input_key(&Inputs { meta: Some(""), ..base }), "unset META is not empty META");
        assert_ne!(
            input_key(&Inputs { topic: "ab", note: "c", ..base }),
            input_key(&Inputs { topic: "a", note: "bc", ..base })
        );
    }

    #[test]
    fn assignments_need_a_claim_and_an_object() {
        assert_eq!(assignment("github:acme/x", true, Some("7"), "k"), "github:acme/x#7");
        assert_eq!(assignment("github:acme/x", false, Some("7"), "k"), "key:k");
        assert_eq!(assignment("github:acme/x", true, None, "k"), "key:k");
        assert_eq!(digest_name("abc", 16), "ba7816bf8f01cfea");
    }
}
