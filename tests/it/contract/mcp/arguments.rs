//! Malformed arguments and task requests are the client's mistake in the
//! protocol's terms (invalid params), and a null argument is refused by name.

use crate::support::{CONTACT, Relay};
use serde_json::json;

use super::client::*;

/// Arguments that do not fit a tool's inputSchema are the client's mistake
/// in the protocol's terms: JSON-RPC invalid params (-32602), for every
/// tool, whatever the shape (not an object, a property of the wrong type,
/// a property the tool does not have, a required one missing), and never
/// "method not found".
#[test]
fn malformed_arguments_are_invalid_params_for_every_tool() {
    let relay = Relay::sandbox();
    let (mut mcp, _) = McpClient::connect(&relay);
    let listed = mcp.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap_or_else(|| panic!("{listed}")).clone();
    for tool in &tools {
        let name = tool["name"].as_str().unwrap();
        let schema = &tool["inputSchema"];
        let properties = schema["properties"].as_object().cloned().unwrap_or_default();
        let mut malformed = vec![json!([1, 2]), json!("id"), json!(5), json!(true), json!({"bogus": 1})];
        // Each property given a value of another type than its own.
        for (property, declared) in &properties {
            let wrong = match declared["type"].as_str() {
                Some("string") => json!(5),
                Some("integer" | "number" | "boolean") => json!("five"),
                Some("array") => json!({"not": "a list"}),
                Some("object") => json!(["not", "an", "object"]),
                other => panic!("{name}.{property}: a type this test does not know: {other:?}"),
            };
            malformed.push(json!({ property: wrong }));
            // Optional or not, no argument is nullable.
            malformed.push(json!({ property: null }));
        }
        if schema["required"].as_array().is_some_and(|r| !r.is_empty()) {
            malformed.push(json!({}));
        }
        for arguments in malformed {
            let response = mcp.request("tools/call", json!({"name": name, "arguments": arguments}));
            assert_eq!(response["error"]["code"], -32602, "{name} with {arguments}: {response}");
            let message = response["error"]["message"].as_str().unwrap();
            assert!(message.contains(name) || message.starts_with("tools/call"), "{name}: {message}");
        }
    }
    // An unknown tool is invalid params too (the spec's example).
    let unknown = mcp.request("tools/call", json!({"name": "create", "arguments": {}}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert_eq!(mcp.close(), Some(0));
}

/// With the tasks extension declared, tasks/* whose params do not have the
/// method's shape are invalid params (-32602), never "method not found".
#[test]
fn malformed_task_requests_are_invalid_params() {
    let relay = Relay::sandbox();
    let tasks = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let (mut mcp, _) = McpClient::connect_with(&relay, &[], tasks);
    let malformed = [
        ("tasks/get", json!({})),
        ("tasks/get", json!({"taskId": 123})),
        ("tasks/cancel", json!({})),
        ("tasks/cancel", json!({"taskId": null})),
        ("tasks/update", json!({"taskId": "00000000-0000-4000-8000-000000000000"})),
        ("tasks/update", json!({"inputResponses": {}})),
    ];
    for (method, params) in malformed {
        let response = mcp.request(method, params.clone());
        assert_eq!(response["error"]["code"], -32602, "{method} {params}: {response}");
        assert!(response["error"]["message"].as_str().unwrap().starts_with(method), "{response}");
    }
    assert_eq!(mcp.close(), Some(0));
}

/// A null where the input schema says a type names the argument and is
/// invalid params, at any depth; leaving it out takes the default.
#[test]
fn a_null_argument_is_refused_by_name() {
    let relay = Relay::started();
    let (mut mcp, _) = McpClient::connect(&relay);
    let cases = [
        ("list_conversations", json!({"limit": null}), "limit is null"),
        (
            "create_conversation",
            json!({"objective": "o", "contact": CONTACT, "todos": ["t"], "max_followups": null}),
            "max_followups is null",
        ),
        (
            "create_conversation",
            json!({"objective": "o", "contact": CONTACT, "todos": ["t"], "time_zone": null}),
            "time_zone is null",
        ),
        (
            "create_conversation",
            json!({"objective": "o", "contact": CONTACT, "todos": ["t", null]}),
            "todos[1] is null",
        ),
    ];
    for (tool, arguments, says) in cases {
        let response = mcp.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert_eq!(response["error"]["code"], -32602, "{tool} {arguments}: {response}");
        let message = response["error"]["message"].as_str().unwrap();
        assert!(message.contains(says) && message.contains("leave an argument out"), "{message}");
    }
    let listed = mcp.call("list_conversations", json!({}));
    assert_eq!(listed["isError"], false, "{listed}");
    // A cursor of the right shape that relay did not give is refused, not an empty page.
    let cursor = "1.00000000000000000000000000000000";
    let refused = mcp.call("list_conversations", json!({"cursor": cursor}));
    assert!(refused["isError"] == true && text(&refused).contains("is not a cursor relay gave"), "{refused}");
    assert_eq!(mcp.close(), Some(0));
}
