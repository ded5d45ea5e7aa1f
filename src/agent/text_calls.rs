//! Tool calls a model wrote as text. Small local models (and the servers
//! that run them) often answer with their calls in the reply's text instead
//! of the provider's tool-call field: Hermes `<tool_call>{...}</tool_call>`,
//! a bare JSON object `{"name": ..., "arguments": {...}}` or a list of them
//! (in a ```json fence or not), or Python-style `send_message(text="hi")`
//! (also `send_message (text: "hi")`).
//! This module only finds them; each goes through the same strict
//! [`super::tools::parse`] as a native call, so a text that is not a valid
//! call is never acted on. What it finds is what the model wrote: nothing
//! here guesses at a call the text does not spell out.

use serde_json::{Map, Number, Value};

// Python-style calls are read only for the tools' names (in any case).
use super::tools::NAMES as TOOL_NAMES;

/// One thing found in a reply's text.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// A call: the tool's name and its arguments (an object when the model
    /// wrote one; anything else is for [`super::tools::parse`] to refuse).
    Call { name: String, arguments: Value },
    /// The text plainly tried to call a tool but cannot be read: why, in
    /// words for the model.
    Unreadable(String),
}

/// The calls in `text`, in the order written, and what plainly tried to be
/// a call but cannot be read. Empty when the text holds neither.
pub fn find(text: &str) -> Vec<Found> {
    let mut found = Vec::new();
    let mut rest = text;
    // Hermes tags first: what is inside one is meant as a call.
    while let Some(open) = rest.find(TAG_OPEN) {
        scan(&rest[..open], &mut found);
        let inside = &rest[open + TAG_OPEN.len()..];
        let (body, after) = match inside.find(TAG_CLOSE) {
            Some(close) => (&inside[..close], &inside[close + TAG_CLOSE.len()..]),
            None => (inside, ""),
        };
        let before = found.len();
        scan(body, &mut found);
        if !found[before..].iter().any(|f| matches!(f, Found::Call { .. })) {
            found.truncate(before);
            found.push(Found::Unreadable(format!(
                "the text in {TAG_OPEN}...{TAG_CLOSE} is not a tool call: write {{\"name\": \"the tool\", \
                 \"arguments\": {{...}}}} in valid JSON"
            )));
        }
        rest = after;
    }
    let before = found.len();
    scan(rest, &mut found);
    // A reply that is nothing but JSON naming a tool, and no call in it.
    let trimmed = strip_fence(rest.trim());
    if found.len() == before
        && (trimmed.starts_with('{') || trimmed.starts_with('['))
        && TOOL_NAMES.iter().any(|name| trimmed.contains(name))
    {
        found.push(Found::Unreadable(
            "your reply looks like a tool call but is not valid JSON of the form {\"name\": \"the tool\", \
             \"arguments\": {...}}"
                .into(),
        ));
    }
    found
}

const TAG_OPEN: &str = "<tool_call>";
const TAG_CLOSE: &str = "</tool_call>";

fn strip_fence(text: &str) -> &str {
    let Some(inner) = text.strip_prefix("```") else { return text };
    let inner = inner.trim_start_matches(|c: char| c.is_ascii_alphanumeric());
    inner.trim_end().trim_end_matches("```").trim()
}

/// Every call in `text` (JSON or Python-style), in order, appended to `found`.
fn scan(text: &str, found: &mut Vec<Found>) {
    let mut at = 0;
    while at < text.len() {
        let rest = &text[at..];
        let c = rest.chars().next().expect("at is below the length");
        if c == '{' || c == '[' {
            let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
            if let Some(Ok(value)) = values.next() {
                // Calls may sit inside other JSON (`{"function": {...}}`);
                // the text of its strings is not read for calls.
                nested_calls(&value, found);
                at += values.byte_offset();
                continue;
            }
        } else if (c.is_ascii_alphabetic() || c == '_') && !ident_before(text, at) {
            let word_len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            let word = &rest[..word_len];
            // Any case: a sentence's first word may be capitalised.
            if let Some(name) = TOOL_NAMES.iter().find(|name| name.eq_ignore_ascii_case(word))
                && let Some((arguments, used)) = python_arguments(&rest[word_len..])
            {
                found.push(Found::Call { name: name.to_string(), arguments: Value::Object(arguments) });
                at += word_len + used;
                continue;
            }
            at += word_len;
            continue;
        }
        at += c.len_utf8();
    }
}

fn ident_before(text: &str, at: usize) -> bool {
    text[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_')
}

/// The calls in `value` or, if it is none, in the values it holds.
fn nested_calls(value: &Value, found: &mut Vec<Found>) {
    let calls = json_calls(value);
    if !calls.is_empty() {
        found.extend(calls);
        return;
    }
    match value {
        Value::Array(items) => items.iter().for_each(|item| nested_calls(item, found)),
        Value::Object(object) => object.values().for_each(|item| nested_calls(item, found)),
        _ => {}
    }
}

/// The calls a JSON value spells: one object, or a list of them (all calls,
/// or it is not a list of calls).
fn json_calls(value: &Value) -> Vec<Found> {
    match value {
        Value::Array(items) => {
            let calls: Vec<Found> = items.iter().filter_map(json_call).collect();
            if calls.len() == items.len() { calls } else { Vec::new() }
        }
        other => json_call(other).into_iter().collect(),
    }
}

/// `{"name": ..., "arguments": ...}` (or `"parameters"`, as some models
/// write), the arguments an object or a JSON string holding one. A bare
/// `{"name": "place_call"}` naming one of the tools is a call without
/// arguments.
fn json_call(value: &Value) -> Option<Found> {
    let object = value.as_object()?;
    let name = object.get("name")?.as_str().filter(|n| !n.trim().is_empty())?;
    let arguments = match object.get("arguments").or_else(|| object.get("parameters")) {
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(parsed @ Value::Object(_)) => parsed,
            _ => Value::String(s.clone()),
        },
        Some(arguments) => arguments.clone(),
        None if object.len() == 1 && TOOL_NAMES.contains(&name) => Value::Object(Map::new()),
        None => return None,
    };
    Some(Found::Call { name: name.to_string(), arguments })
}

/// `(key=value, ...)`, `(key: value, ...)` or `({...})` at the start of
/// `text` (after spaces on the same line): the arguments, and the bytes
/// read. Only keyword arguments or one JSON object; any other positional
/// argument means this is not a call.
fn python_arguments(text: &str) -> Option<(Map<String, Value>, usize)> {
    let mut reader = Reader { text, at: 0 };
    while reader.eat(' ') {}
    reader.expect('(')?;
    let mut arguments = Map::new();
    reader.skip_space();
    if reader.eat(')') {
        return Some((arguments, reader.at));
    }
    // The arguments as one JSON object, `send_message({"text": "hi"})`:
    // that object is the arguments.
    if reader.peek() == Some('{') {
        let mut values = serde_json::Deserializer::from_str(&text[reader.at..]).into_iter::<Value>();
        let Some(Ok(Value::Object(object))) = values.next() else { return None };
        reader.at += values.byte_offset();
        reader.skip_space();
        reader.expect(')')?;
        return Some((object, reader.at));
    }
    loop {
        reader.skip_space();
        let key = reader.identifier()?;
        reader.skip_space();
        if !reader.eat('=') {
            reader.expect(':')?;
        }
        reader.skip_space();
        let value = reader.value()?;
        arguments.insert(key, value);
        reader.skip_space();
        if reader.eat(')') {
            return Some((arguments, reader.at));
        }
        reader.expect(',')?;
        reader.skip_space();
        if reader.eat(')') {
            return Some((arguments, reader.at));
        }
    }
}

/// A cursor over Python-style arguments.
struct Reader<'a> {
    text: &'a str,
    at: usize,
}

impl Reader<'_> {
    fn peek(&self) -> Option<char> {
        self.text[self.at..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += c.len_utf8();
        Some(c)
    }

    fn eat(&mut self, c: char) -> bool {
        let ate = self.peek() == Some(c);
        if ate {
            self.at += c.len_utf8();
        }
        ate
    }

    fn expect(&mut self, c: char) -> Option<()> {
        self.eat(c).then_some(())
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.at += self.peek().map_or(0, char::len_utf8);
        }
    }

    fn word(&mut self) -> &str {
        let rest = &self.text[self.at..];
        let len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        self.at += len;
        &rest[..len]
    }

    fn identifier(&mut self) -> Option<String> {
        let first = self.peek()?;
        if !(first.is_ascii_alphabetic() || first == '_') {
            return None;
        }
        Some(self.word().to_string())
    }

    fn value(&mut self) -> Option<Value> {
        match self.peek()? {
            quote @ ('"' | '\'') => {
                self.bump();
                self.string(quote).map(Value::String)
            }
            '-' | '0'..='9' => self.number(),
            _ => match self.word() {
                "true" | "True" => Some(Value::Bool(true)),
                "false" | "False" => Some(Value::Bool(false)),
                "null" | "None" => Some(Value::Null),
                _ => None,
            },
        }
    }

    fn number(&mut self) -> Option<Value> {
        let rest = &self.text[self.at..];
        let len = rest
            .char_indices()
            .find(|&(i, c)| {
                !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || ((c == '-' || c == '+') && i == 0))
            })
            .map_or(rest.len(), |(i, _)| i);
        let written = &rest[..len];
        self.at += len;
        if let Ok(n) = written.parse::<i64>() {
            return Some(Value::Number(n.into()));
        }
        written.parse::<f64>().ok().and_then(Number::from_f64).map(Value::Number)
    }

    /// A string's body after its opening `quote`, with Python's and JSON's
    /// escapes (`\n`, `\'`, `\"`, `\\`, `\uXXXX` with surrogate pairs, `\xNN`).
    fn string(&mut self, quote: char) -> Option<String> {
        let mut out = String::new();
        loop {
            match self.bump()? {
                c if c == quote => return Some(out),
                '\\' => match self.bump()? {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    'b' => out.push('\u{8}'),
                    'f' => out.push('\u{c}'),
                    '0' => out.push('\0'),
                    'x' => out.push(char::from_u32(self.hex(2)?)?),
                    'u' => {
                        let high = self.hex(4)?;
                        if (0xD800..0xDC00).contains(&high) {
                            let (backslash, u) = (self.bump()?, self.bump()?);
                            let low = self.hex(4)?;
                            if backslash != '\\' || u != 'u' || !(0xDC00..0xE000).contains(&low) {
                                return None;
                            }
                            out.push(char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))?);
                        } else {
                            out.push(char::from_u32(high)?);
                        }
                    }
                    c @ ('\\' | '\'' | '"' | '/') => out.push(c),
                    '\n' => {} // a line continuation
                    other => {
                        out.push('\\');
                        out.push(other);
                    }
                },
                c => out.push(c),
            }
        }
    }

    fn hex(&mut self, digits: usize) -> Option<u32> {
        let rest = self.text.get(self.at..self.at + digits).filter(|h| h.chars().all(|c| c.is_ascii_hexdigit()))?;
        let n = u32::from_str_radix(rest, 16).ok()?;
        self.at += digits;
        Some(n)
    }
}

#[cfg(test)]
mod tests;
