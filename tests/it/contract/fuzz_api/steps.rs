//! What a case is made of: requests as steps, hostile or valid, and the
//! parts they are built from (text, ids, headers, bodies, targets).

use super::*;

/// Text that prints short even when long: `unit` repeated `times` times.
#[derive(Clone)]
pub(super) struct Txt {
    pub(super) unit: String,
    pub(super) times: usize,
}

impl Txt {
    pub(super) fn once(unit: String) -> Txt {
        Txt { unit, times: 1 }
    }
    pub(super) fn string(&self) -> String {
        self.unit.repeat(self.times)
    }
}

impl fmt::Debug for Txt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.times {
            1 => write!(f, "{:?}", self.unit),
            n => write!(f, "{:?}x{n}", self.unit),
        }
    }
}

/// A conversation id as a request names it.
#[derive(Debug, Clone)]
pub(super) enum Id {
    /// The first `len` characters of a conversation created earlier.
    Known {
        pick: usize,
        len: usize,
        upper: bool,
        padded: bool,
    },
    Uuid(u128),
    Text(String),
}

impl Id {
    pub(super) fn text(&self, ids: &[String]) -> String {
        match self {
            Id::Known { pick, len, upper, padded } => {
                let full = ids.get(pick % ids.len().max(1)).map_or("0000", String::as_str);
                let mut id: String = full.chars().take(*len).collect();
                if *upper {
                    id = id.to_uppercase();
                }
                if *padded { format!(" {id} ") } else { id }
            }
            Id::Uuid(n) => uuid::Uuid::from_u128(*n).to_string(),
            Id::Text(s) => s.clone(),
        }
    }
}

#[derive(Debug, Clone)]
pub(super) enum Auth {
    Right,
    Missing,
    /// A near miss of the right token (see `Auth::value`).
    Twisted(u8),
    Value(B),
}

impl Auth {
    pub(super) fn value(&self) -> Option<Vec<u8>> {
        let twisted = |n: u8| match n % 9 {
            0 => format!("bearer {TOKEN}"),
            1 => format!("Bearer  {TOKEN}"),
            2 => format!("Bearer {TOKEN} "),
            3 => format!("Bearer {}", &TOKEN[..TOKEN.len() - 1]),
            4 => format!("Bearer {TOKEN}x"),
            5 => format!("Basic {TOKEN}"),
            6 => TOKEN.to_string(),
            7 => format!("Bearer {}", TOKEN.to_uppercase()),
            _ => "Bearer ".to_string(),
        };
        match self {
            Auth::Right => Some(format!("Bearer {TOKEN}").into_bytes()),
            Auth::Missing => None,
            Auth::Twisted(n) => Some(twisted(*n).into_bytes()),
            Auth::Value(b) => Some(b.0.clone()),
        }
    }
}

#[derive(Debug, Clone)]
pub(super) enum Length {
    None,
    Correct,
    Value(&'static str),
}

#[derive(Debug, Clone)]
pub(super) struct Headers {
    pub(super) host: Option<B>,
    pub(super) auth: Auth,
    pub(super) content_type: Option<B>,
    pub(super) content_length: Length,
    pub(super) transfer_encoding: Option<&'static str>,
    pub(super) origin: Option<&'static str>,
    pub(super) extra: Vec<(&'static str, B)>,
}

#[derive(Debug, Clone)]
pub(super) struct Create {
    pub(super) objective: Txt,
    pub(super) contact: String,
    /// None: `todos` of a wrong type.
    pub(super) todos: Option<Vec<Txt>>,
    /// Raw JSON literals for interval_ms and max_followups.
    pub(super) heartbeat: Option<(Option<&'static str>, Option<&'static str>)>,
    pub(super) extra_field: bool,
}

impl Create {
    pub(super) fn json(&self) -> Vec<u8> {
        let s = |t: &str| serde_json::to_string(t).unwrap();
        let todos = match &self.todos {
            Some(todos) => {
                let items: Vec<String> = todos.iter().map(|t| format!("{{\"text\":{}}}", s(&t.string()))).collect();
                format!("[{}]", items.join(","))
            }
            None => "\"one\"".into(),
        };
        let mut body = format!(
            "{{\"objective\":{},\"target_contact\":{},\"todos\":{todos}",
            s(&self.objective.string()),
            s(&self.contact)
        );
        if let Some((interval, max)) = self.heartbeat {
            let mut fields = Vec::new();
            if let Some(interval) = interval {
                fields.push(format!("\"interval_ms\":{interval}"));
            }
            if let Some(max) = max {
                fields.push(format!("\"max_followups\":{max}"));
            }
            body.push_str(&format!(",\"heartbeat_config\":{{{}}}", fields.join(",")));
        }
        if self.extra_field {
            body.push_str(",\"extra\":1");
        }
        body.push('}');
        body.into_bytes()
    }
}

#[derive(Debug, Clone)]
pub(super) enum Bytes {
    Literal(B),
    Json(Value),
    Create(Create),
    /// `{"<key>": <literal>}`
    Field(&'static str, &'static str),
    Message(Txt),
    Say(String, Txt),
    /// `depth` times `open`: deep nesting.
    Nested(&'static str, usize),
    /// `len` bytes of `fill`, inside a JSON string when `quoted`.
    Huge {
        fill: u8,
        len: usize,
        quoted: bool,
    },
    NonUtf8(B),
}

impl Bytes {
    pub(super) fn bytes(&self) -> Vec<u8> {
        match self {
            Bytes::Literal(b) | Bytes::NonUtf8(b) => b.0.clone(),
            Bytes::Json(v) => serde_json::to_vec(v).unwrap(),
            Bytes::Create(c) => c.json(),
            Bytes::Field(key, literal) => format!("{{\"{key}\":{literal}}}").into_bytes(),
            Bytes::Message(t) => serde_json::to_vec(&serde_json::json!({ "message": t.string() })).unwrap(),
            Bytes::Say(contact, t) => {
                serde_json::to_vec(&serde_json::json!({ "contact": contact, "text": t.string() })).unwrap()
            }
            Bytes::Nested(open, depth) => open.repeat(*depth).into_bytes(),
            Bytes::Huge { fill, len, quoted } => {
                let mut body = vec![*fill; *len];
                if *quoted {
                    body.splice(0..0, b"{\"message\":\"".iter().copied());
                    body.extend_from_slice(b"\"}");
                }
                body
            }
        }
    }
}

#[derive(Debug, Clone)]
pub(super) enum Target {
    Route { template: &'static str, id: Id, before: &'static str, after: &'static str, query: Option<String> },
    Raw(String),
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Action {
    Get,
    Transcript,
    Cancel,
    Pause,
    Resume,
    Send,
}

#[derive(Debug, Clone)]
pub(super) struct Hostile {
    pub(super) method: &'static str,
    pub(super) target: Target,
    pub(super) headers: Headers,
    pub(super) body: Bytes,
}

/// One request of a case.
#[derive(Debug, Clone)]
pub(super) enum Step {
    /// Anything, from anyone.
    Hostile(Box<Hostile>),
    /// Well-formed and authorised, with values from odd to ordinary.
    Create(Create),
    Act {
        action: Action,
        id: Id,
        message: Txt,
    },
    Say {
        contact: String,
        text: Txt,
    },
    List {
        query: Option<String>,
    },
    Outbox {
        contact: Option<String>,
    },
}
