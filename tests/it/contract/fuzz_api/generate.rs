//! What proptest generates: the values it picks from, and the strategies
//! that make a case's steps (`steps.rs`), hostile and valid.

use super::*;

// ---------------------------------------------------------------------------
// What proptest generates
// ---------------------------------------------------------------------------

pub(super) const ROUTES: &[&str] = &[
    "/health",
    "/status",
    "/shutdown",
    "/openapi.json",
    "/instances",
    "/instances/{id}",
    "/instances/{id}/transcript",
    "/instances/{id}/cancel",
    "/instances/{id}/pause",
    "/instances/{id}/resume",
    "/instances/{id}/send",
    "/instances/{id}/answer",
    "/webhooks",
    "/webhooks/{id}",
    "/opt-outs",
    "/opt-outs/{id}",
    "/sandbox/messages",
    "/sandbox/outbox",
    "/whatsapp/pair",
];

pub(super) const METHODS: &[&str] = &[
    "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE", "CONNECT", "get", "post", "M-SEARCH",
    "PROPFIND", "X",
];

pub(super) const ODD_TEXT: &[&str] = &[
    "",
    " ",
    "\t\n",
    "\0",
    "a\0b",
    "..",
    "../..",
    "%00",
    "%ff",
    "%",
    "%2e%2e",
    "%2F",
    "é",
    "日本語",
    "🦀",
    "\u{202e}",
    "\u{feff}",
    "\u{fffd}",
    "\u{10ffff}",
    "\r\n\r\n",
    "null",
    "{}",
    "'; DROP TABLE x; --",
    "<script>",
    "${HOME}",
    "$(id)",
];

/// Contacts a create accepts; few, so conversations queue behind each other.
pub(super) const VALID_CONTACTS: &[&str] =
    &["+56912345678", "+447911123456", "+14155552671", "+56 9 8765 4321", "+4915123456789"];

pub(super) const CONTACTS: &[&str] = &[
    "+56912345678",
    "+447911123456",
    "+14155552671",
    "+56 9 8765 4321",
    "+56-9-1111-2222",
    "  +4915123456789  ",
    "+81312345678",
    "+390612345678",
    "+1-800-FLOWERS",
    "＋５６９１２３４５６７８",
    "+٥٦٩١٢٣٤٥٦٧٨",
    "+56912345678;ext=12",
    "+56912345678 ext. 99",
    "tel:+56912345678",
    "+",
    "++56912345678",
    "+0",
    "+999999999999",
    "+1",
    "+123456789012345678901234567890",
    "56912345678",
    "",
    "+(56) 9 (1234) 5678",
    "+56912345678\u{0}",
    // Iran: normalised to "+980001", which parse itself refuses (see the last test).
    "+98000001",
];

pub(super) const NUMBERS: &[&str] = &[
    "0",
    "1",
    "999",
    "1000",
    "60000",
    "2592000000",
    "2592000001",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999999",
    "-1",
    "-0",
    "0.5",
    "1.0",
    "1e3",
    "1E2",
    "1e400",
    "-1e400",
    "100",
    "101",
    "null",
    "true",
    "\"60000\"",
    "[]",
    "{}",
];

pub(super) const KEYS: &[&str] = &[
    "objective",
    "target_contact",
    "todos",
    "text",
    "heartbeat_config",
    "interval_ms",
    "max_followups",
    "message",
    "contact",
    "phone",
    "force",
    "state",
    "extra",
    "",
    "__proto__",
];

/// Bodies that are not JSON, or JSON at its edges.
pub(super) const ODD_BODIES: &[&str] = &[
    "",
    " ",
    "null",
    "[]",
    "{}",
    "{",
    "}",
    "\"",
    "1e400",
    "18446744073709551616",
    "-1",
    "{\"message\":\"\\ud800\"}",
    "{\"message\":\"\\udc00\\ud800\"}",
    "{\"message\":\"a\\u0000b\"}",
    "{\"message\":\"a\0b\"}",
    "{\"message\":\"x\"} trailing",
    "{\"message\":\"a\",\"message\":\"b\"}",
    "{\"message\":\"\\x\"}",
    "{\"message\":\"hi\",}",
    "\u{feff}{\"message\":\"hi\"}",
    "{\"contact\":\"+56912345678\",\"text\":\"\\ud83e\\udd80\"}",
    "{\"contact\":\"+56912345678\",\"text\":\"\\u0000\"}",
    "{\"phone\":null,\"force\":\"yes\"}",
    "{\"phone\":\"+56912345678\",\"force\":true}",
    "{\"objective\":\"o\",\"target_contact\":\"+56912345678\",\"todos\":[{\"text\":\"t\"}],\"heartbeat_config\":null}",
    "{\"objective\":\"o\",\"target_contact\":\"+56912345678\",\"todos\":[{\"text\":\"t\"}],\"heartbeat_config\":{\"interval_ms\":1e400}}",
    "{\"objective\":\"o\",\"target_contact\":\"+56912345678\",\"todos\":[{\"text\":\"t\"}],\"heartbeat_config\":{\"max_followups\":18446744073709551616}}",
    "{\"objective\":\"o\",\"target_contact\":\"+56912345678\",\"todos\":[\"t\"]}",
    "{\"objective\":\"o\",\"target_contact\":\"+56912345678\",\"todos\":{\"text\":\"t\"}}",
    "{\"objective\":[],\"target_contact\":1,\"todos\":[{\"text\":2}]}",
];

pub(super) const CONTENT_TYPES: &[&str] = &[
    "application/json",
    "application/json; charset=utf-8",
    "APPLICATION/JSON",
    "application/json;",
    " application/json ",
    "application/jsonx",
    "application/vnd.api+json",
    "text/plain",
    "multipart/form-data; boundary=x",
    ";",
    "",
];

pub(super) const HOSTS: &[&str] = &[
    "127.0.0.1",
    "127.0.0.1:3214",
    "localhost",
    "LOCALHOST:1",
    "[::1]",
    "[::1]:99999",
    "[::1",
    "::1",
    "127.0.0.1:",
    "127.0.0.1:abc",
    "localhost.",
    "127.0.0.1.evil.com",
    "evil.com",
    "0.0.0.0",
    "127.1",
    "",
];

pub(super) const HEADER_NAMES: &[&str] = &[
    "host",
    "authorization",
    "content-type",
    "content-length",
    "transfer-encoding",
    "origin",
    "expect",
    "connection",
    "upgrade",
    "accept",
    "accept-encoding",
    "content-encoding",
    "x-forwarded-for",
    "x-forwarded-host",
    "forwarded",
    "cookie",
    "range",
];

pub(super) fn txt() -> impl Strategy<Value = Txt> {
    prop_oneof![
        4 => "[a-zA-Z0-9 ,.!?]{1,40}".prop_map(Txt::once),
        2 => any::<String>().prop_map(Txt::once),
        2 => vec(any::<char>(), 0..24).prop_map(|c| Txt::once(c.into_iter().collect())),
        1 => select(ODD_TEXT).prop_map(|s| Txt::once(s.into())),
        1 => (select(&["x", "é", "🦀", " ", "\0"][..]), select(&[499, 500, 501, 1000, 4000, 4001, 4096, 4097, 20_000][..]))
            .prop_map(|(unit, times)| Txt { unit: unit.into(), times }),
    ]
}

pub(super) fn contact() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => select(CONTACTS).prop_map(String::from),
        1 => "\\+[0-9]{0,20}",
        1 => "\\+[0-9 ()./-]{0,30}(;ext=[0-9]{0,5})?",
        1 => any::<String>().prop_map(|s| format!("+{s}")),
        1 => any::<String>(),
    ]
}

pub(super) fn id() -> impl Strategy<Value = Id> {
    prop_oneof![
        6 => (any::<usize>(), prop_oneof![4 => Just(36usize), 1 => 0usize..40], prop::bool::weighted(0.1), prop::bool::weighted(0.1))
            .prop_map(|(pick, len, upper, padded)| Id::Known { pick, len, upper, padded }),
        1 => any::<u128>().prop_map(Id::Uuid),
        1 => "[0-9a-f-]{0,12}".prop_map(Id::Text),
        2 => select(ODD_TEXT).prop_map(|s| Id::Text(s.into())),
        1 => any::<String>().prop_map(Id::Text),
        1 => (1usize..5000).prop_map(|n| Id::Text("a".repeat(n))),
    ]
}

pub(super) fn query() -> impl Strategy<Value = Option<String>> {
    let key = prop_oneof![4 => select(&["state", "contact"][..]), 1 => select(KEYS), 1 => select(ODD_TEXT)];
    let value = prop_oneof![
        3 => select(&["ACTIVE", "QUEUED", "WAITING_FOR_REPLY", "NEEDS_HUMAN_INTERVENTION", "active", "NOPE"][..])
            .prop_map(String::from),
        3 => contact(),
        1 => select(ODD_TEXT).prop_map(String::from),
        1 => Just("%FF%FE".to_string()),
    ];
    prop_oneof![
        2 => Just(None),
        4 => vec((key, value, any::<bool>()), 0..4).prop_map(|pairs| Some(
            pairs.iter().map(|(k, v, eq)| if *eq { format!("{k}={v}") } else { k.to_string() }).collect::<Vec<_>>().join("&")
        )),
        1 => any::<String>().prop_map(Some),
    ]
}

pub(super) fn target() -> impl Strategy<Value = Target> {
    let before = select(&["", "", "", "", "/", "//", "/..", "/./", "/%2e%2e", "/instances/.."][..]);
    let after = select(&["", "", "", "", "", "/", "//", "/..", "/.", "#frag", "/extra", "%00", ";x", "%2F"][..]);
    prop_oneof![
        8 => (select(ROUTES), id(), before, after, query())
            .prop_map(|(template, id, before, after, query)| Target::Route { template, id, before, after, query }),
        1 => any::<String>().prop_map(Target::Raw),
        1 => vec(select(&["/", "..", "%2e", "instances", "%ff", "?", "#", "*", "//", "%", "\\", "@", "http://evil"][..]), 0..8)
            .prop_map(|parts| Target::Raw(parts.concat())),
        1 => (1usize..20_000).prop_map(|n| Target::Raw(format!("/instances/{}", "a".repeat(n)))),
    ]
}

pub(super) fn header_bytes() -> impl Strategy<Value = B> {
    prop_oneof![
        3 => select(ODD_TEXT).prop_map(B::from),
        2 => vec(any::<u8>(), 0..32).prop_map(B),
        1 => (1usize..10_000).prop_map(|n| B(vec![b'x'; n])),
    ]
}

pub(super) fn headers() -> impl Strategy<Value = Headers> {
    let host = prop_oneof![
        6 => Just(Some(B::from("127.0.0.1:3214"))),
        3 => select(HOSTS).prop_map(|h| Some(B::from(h))),
        1 => Just(None),
        1 => header_bytes().prop_map(Some),
    ];
    let auth = prop_oneof![
        6 => Just(Auth::Right),
        2 => Just(Auth::Missing),
        2 => any::<u8>().prop_map(Auth::Twisted),
        1 => header_bytes().prop_map(Auth::Value),
    ];
    let content_type = prop_oneof![
        4 => Just(Some(B::from("application/json"))),
        2 => select(CONTENT_TYPES).prop_map(|c| Some(B::from(c))),
        1 => Just(None),
        1 => header_bytes().prop_map(Some),
    ];
    let content_length = prop_oneof![
        6 => Just(Length::None),
        2 => Just(Length::Correct),
        2 => select(&["0", "1", "65536", "65537", "abc", "-1", "+5", "18446744073709551616", " 5", "5, 5", ""][..])
            .prop_map(Length::Value),
    ];
    let transfer_encoding = prop_oneof![
        8 => Just(None),
        1 => select(&["chunked", "gzip", "identity", "chunked, chunked", "x"][..]).prop_map(Some),
    ];
    let origin = prop_oneof![8 => Just(None), 1 => select(&["null", "http://evil.com", "http://127.0.0.1:3214", ""][..]).prop_map(Some)];
    let extra = vec((select(HEADER_NAMES), header_bytes()), 0..4);
    (host, auth, content_type, content_length, transfer_encoding, origin, extra).prop_map(
        |(host, auth, content_type, content_length, transfer_encoding, origin, extra)| Headers {
            host,
            auth,
            content_type,
            content_length,
            transfer_encoding,
            origin,
            extra,
        },
    )
}

pub(super) fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        txt().prop_map(|t| Value::String(t.string())),
        contact().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Value::Array),
            vec((select(KEYS), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
        ]
    })
}

/// A create request whose values range from ordinary to out of bounds.
pub(super) fn create() -> impl Strategy<Value = Create> {
    let todos = prop_oneof![
        8 => vec(txt(), 1..4).prop_map(Some),
        1 => vec(txt(), 0..60).prop_map(Some),
        1 => Just(None),
    ];
    let number = prop_oneof![
        2 => Just(None),
        2 => select(&["1000", "60000", "5", "0"][..]).prop_map(Some),
        2 => select(NUMBERS).prop_map(Some),
    ];
    let heartbeat = prop_oneof![2 => Just(None), 3 => (number.clone(), number).prop_map(Some)];
    (txt(), contact(), todos, heartbeat, prop::bool::weighted(0.05)).prop_map(
        |(objective, contact, todos, heartbeat, extra_field)| Create {
            objective,
            contact,
            todos,
            heartbeat,
            extra_field,
        },
    )
}

/// A create request that mostly succeeds, so the other steps find
/// conversations (in every state) to act on.
pub(super) fn valid_create() -> impl Strategy<Value = Create> {
    let objective = prop_oneof![
        3 => "[A-Za-z][A-Za-z0-9 ,.]{0,40}".prop_map(Txt::once),
        1 => any::<String>().prop_map(|s| Txt::once(format!("o{s}"))),
    ];
    let number = |values: &'static [&'static str]| prop::option::of(select(values));
    let heartbeat =
        prop::option::of((number(&["1000", "1500", "60000", "2592000000"]), number(&["0", "1", "5", "100"])));
    (objective, select(VALID_CONTACTS), vec("[a-z][a-z ]{0,20}".prop_map(Txt::once), 1..4), heartbeat).prop_map(
        |(objective, contact, todos, heartbeat)| Create {
            objective,
            contact: contact.into(),
            todos: Some(todos),
            heartbeat,
            extra_field: false,
        },
    )
}

pub(super) fn body() -> impl Strategy<Value = Bytes> {
    prop_oneof![
        3 => select(ODD_BODIES).prop_map(|b| Bytes::Literal(B::from(b))),
        2 => json_value().prop_map(Bytes::Json),
        3 => create().prop_map(Bytes::Create),
        2 => (select(KEYS), select(NUMBERS)).prop_map(|(k, n)| Bytes::Field(k, n)),
        2 => txt().prop_map(Bytes::Message),
        1 => (contact(), txt()).prop_map(|(c, t)| Bytes::Say(c, t)),
        1 => (select(&["[", "{\"a\":", "{\"message\":[", "[{\"text\":"][..]), select(&[127usize, 128, 129, 10_000][..]))
            .prop_map(|(open, depth)| Bytes::Nested(open, depth)),
        1 => (select(&[b'x', b' ', b'[', 0u8, 0xff][..]), select(&[65_000usize, 65_536, 65_537, 70_000, 200_000][..]), any::<bool>())
            .prop_map(|(fill, len, quoted)| Bytes::Huge { fill, len, quoted }),
        1 => vec(any::<u8>(), 0..64).prop_map(|b| Bytes::NonUtf8(B(b))),
        1 => vec(any::<u8>(), 0..16).prop_map(|b| {
            let mut body = b"{\"message\":\"".to_vec();
            body.extend(b);
            body.extend_from_slice(b"\"}");
            Bytes::NonUtf8(B(body))
        }),
    ]
}

pub(super) fn action() -> impl Strategy<Value = Action> {
    select(&[Action::Get, Action::Transcript, Action::Cancel, Action::Pause, Action::Resume, Action::Send][..])
}

pub(super) fn step() -> impl Strategy<Value = Step> {
    let hostile = (select(METHODS), target(), headers(), body())
        .prop_map(|(method, target, headers, body)| Step::Hostile(Box::new(Hostile { method, target, headers, body })));
    prop_oneof![
        12 => hostile,
        3 => valid_create().prop_map(Step::Create),
        1 => create().prop_map(Step::Create),
        6 => (action(), id(), txt()).prop_map(|(action, id, message)| Step::Act { action, id, message }),
        2 => (contact(), txt()).prop_map(|(contact, text)| Step::Say { contact, text }),
        1 => query().prop_map(|query| Step::List { query }),
        1 => prop::option::of(contact()).prop_map(|contact| Step::Outbox { contact }),
    ]
}
