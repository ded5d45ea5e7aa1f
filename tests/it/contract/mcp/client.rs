//! This test's side of `relay mcp`: the child process and the MCP client
//! that speaks to it, and what reading its answers takes (a result's text
//! and JSON document, an answer checked against its schema, the JSON-RPC
//! error codes relay may give, a schema's nodes).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::support::Relay;
use serde_json::{Value, json};

/// How long any one answer may take.
pub(super) const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);

/// `relay mcp` as a child process, and this test as its MCP client.
pub(super) struct McpClient {
    child: Child,
    stdin: Option<ChildStdin>,
    /// stdout, one line per message, read by a helper thread.
    lines: Receiver<String>,
    /// Notifications read while looking for an answer, oldest first.
    notices: VecDeque<Value>,
    next_id: u64,
}

impl McpClient {
    /// Spawns `relay mcp` and completes the handshake; returns the client
    /// and the `initialize` result.
    pub(super) fn connect(relay: &Relay) -> (McpClient, Value) {
        McpClient::connect_with(relay, &[], json!({}))
    }

    /// [`McpClient::connect`], with more arguments to `relay mcp` and the
    /// client's capabilities.
    pub(super) fn connect_with(relay: &Relay, args: &[&str], capabilities: Value) -> (McpClient, Value) {
        let mut command = vec!["mcp"];
        command.extend_from_slice(args);
        let mut child = relay
            .command(&command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn relay mcp");
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut client = McpClient { child, stdin, lines, notices: VecDeque::new(), next_id: 1 };
        let initialized = client.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": capabilities,
                "clientInfo": {"name": "relay-tests", "version": "0"}
            }),
        );
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        (client, initialized["result"].clone())
    }

    pub(super) fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write to relay mcp");
        stdin.flush().unwrap();
    }

    /// Sends a request and returns the whole response (`result` or `error`).
    pub(super) fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.start(method, params);
        self.answer(id, method)
    }

    /// Sends a request and returns its id, without waiting for the answer.
    pub(super) fn start(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The answer to request `id` (keeping the notifications that come first).
    pub(super) fn answer(&mut self, id: u64, method: &str) -> Value {
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        loop {
            let message = self.next_message(deadline, &format!("an answer to {method} (id {id})"));
            if message["id"] == id && message.get("method").is_none() {
                check_error_code(method, &message);
                return message;
            }
            assert!(message["id"].is_null(), "an answer to a request not waited for: {message}");
            self.notices.push_back(message);
        }
    }

    /// The next notification named `method` (the ones before it are dropped).
    pub(super) fn notice(&mut self, method: &str) -> Value {
        if let Some(at) = self.notices.iter().position(|n| n["method"] == method) {
            self.notices.drain(..at);
            return self.notices.pop_front().unwrap();
        }
        self.notices.clear();
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        loop {
            let message = self.next_message(deadline, &format!("a {method} notification"));
            assert!(message["id"].is_null() || message.get("method").is_some(), "an answer not waited for: {message}");
            if message["method"] == method {
                return message;
            }
        }
    }

    /// The next message on stdout, which carries protocol messages and nothing else.
    pub(super) fn next_message(&mut self, deadline: Instant, what: &str) -> Value {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = match self.lines.recv_timeout(left) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => panic!("no {what} within {ANSWER_TIMEOUT:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("relay mcp closed stdout before {what}"),
        };
        let message: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not a JSON-RPC message on stdout ({e}): {line}"));
        assert_eq!(message["jsonrpc"], "2.0", "{message}");
        message
    }

    /// `tools/call`; returns its result, failing on a JSON-RPC error, and
    /// on a successful result whose structured content does not conform to
    /// the tool's outputSchema (every call of every test checks it).
    pub(super) fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let response = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert!(response.get("error").is_none(), "{tool}: a protocol error instead of a result: {response}");
        let result = response["result"].clone();
        if result["isError"] != true {
            let listed = self.request("tools/list", json!({}));
            let tools = listed["result"]["tools"].as_array().unwrap_or_else(|| panic!("{listed}"));
            let schema = &tools.iter().find(|t| t["name"] == tool).unwrap()["outputSchema"];
            assert!(schema.is_object(), "{tool} has no outputSchema");
            let structured = &result["structuredContent"];
            if let Err(wrong) = conforms(structured, schema, schema, "") {
                panic!("{tool}'s result does not conform to its outputSchema: {wrong}\n{structured:#}");
            }
        }
        result
    }

    /// Closes stdin and waits for the server to exit; returns its exit code.
    pub(super) fn close(&mut self) -> Option<i32> {
        drop(self.stdin.take());
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("relay mcp did not exit after its stdin closed");
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The one text block of a tool result.
pub(super) fn text(result: &Value) -> &str {
    let content = result["content"].as_array().unwrap_or_else(|| panic!("no content: {result}"));
    assert_eq!(content.len(), 1, "{result}");
    assert_eq!(content[0]["type"], "text", "{result}");
    content[0]["text"].as_str().unwrap()
}

/// The JSON document of a successful tool result: structured content (an
/// object), and the same document as compact JSON text.
pub(super) fn document(result: &Value) -> Value {
    assert_eq!(result["isError"], false, "{result}");
    let document: Value = serde_json::from_str(text(result)).unwrap_or_else(|e| panic!("not JSON ({e}): {result}"));
    assert!(document.is_object(), "{result}");
    assert_eq!(result["structuredContent"], document, "{result}");
    assert_eq!(text(result), document.to_string(), "compact JSON");
    document
}

/// Whether `value` conforms to `schema` (a tool's outputSchema, whose
/// `$defs` are in `root`), by a real JSON Schema validator (draft 2020-12,
/// formats checked).
pub(super) fn conforms(value: &Value, schema: &Value, root: &Value, at: &str) -> Result<(), String> {
    let mut whole = schema.clone();
    if let (Some(whole), Some(defs)) = (whole.as_object_mut(), root.get("$defs")) {
        whole.insert("$defs".into(), defs.clone());
    }
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&whole)
        .unwrap_or_else(|e| panic!("{at}: the schema does not compile: {e}"));
    let errors: Vec<String> = validator.iter_errors(value).map(|e| format!("{e} at {}", e.instance_path())).collect();
    if errors.is_empty() { Ok(()) } else { Err(format!("{at}: {}", errors.join("; "))) }
}

/// The JSON-RPC error codes an answer may carry: the protocol's own, and
/// "method not found" only for a method relay does not serve.
pub(super) fn check_error_code(method: &str, response: &Value) {
    let Some(code) = response["error"]["code"].as_i64() else { return };
    const SERVED: [&str; 8] =
        ["initialize", "ping", "tools/list", "tools/call", "tasks/get", "tasks/cancel", "tasks/update", "tasks/list"];
    match code {
        // -32021: the tasks extension's "missing required client capability".
        -32700 | -32600 | -32602 | -32603 | -32021 => {}
        -32601 => assert!(!SERVED.contains(&method), "{method} is served, yet answered method not found: {response}"),
        other => panic!("{method}: {other} is no JSON-RPC error code relay gives: {response}"),
    }
}

/// Every node of a schema, depth first.
pub(super) fn nodes<'a>(value: &'a Value, each: &mut impl FnMut(&'a serde_json::Map<String, Value>)) {
    match value {
        Value::Object(object) => {
            each(object);
            object.values().for_each(|child| nodes(child, each));
        }
        Value::Array(items) => items.iter().for_each(|item| nodes(item, each)),
        _ => {}
    }
}
