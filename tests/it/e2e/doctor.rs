//! `relay doctor` on the real binary: each check says what it found and,
//! when something is wrong, the fix; exit 1 only when a check failed; the
//! model check sends one tiny request (none with `--offline`); and nothing
//! from config.json or a path reaches the terminal as a control character.

use std::sync::Arc;

use relay::scripted_model::{Reply, queue};
use serde_json::{Value, json};

use crate::support::*;

const NAMES: [&str; 10] =
    ["home", "config", "daemon", "service", "channel", "receipts", "courtesy", "model", "disk", "clock"];
const STATUSES: [&str; 4] = ["ok", "warning", "failed", "skipped"];

/// `relay doctor --json ARGS`: its exit code and its one document, whose
/// shape is checked here once for every test.
fn doctor(relay: &Relay, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["doctor", "--json"];
    all.extend_from_slice(args);
    let run = relay.run(&all);
    let report: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("doctor printed no single JSON document ({e}): {}{}", run.stdout, run.stderr));
    let checks = report["checks"].as_array().expect("checks");
    let names: Vec<&str> = checks.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, NAMES, "{report:#}");
    for check in checks {
        assert!(STATUSES.contains(&check["status"].as_str().unwrap()), "{check}");
        assert!(!check["detail"].as_str().unwrap().is_empty(), "{check}");
        // What is wrong says what to do about it.
        if matches!(check["status"].as_str(), Some("warning" | "failed")) {
            assert!(!check["fix"].as_str().unwrap_or_default().is_empty(), "{check}");
        }
    }
    let failed = checks.iter().any(|c| c["status"] == "failed");
    assert_eq!(report["ok"], !failed, "{report:#}");
    assert_eq!(run.code, if failed { 1 } else { 0 }, "{report:#}\n{}", run.stderr);
    (run.code, report)
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap()
}

#[test]
fn an_uninitialised_home_fails_with_relay_init_as_the_fix() {
    let relay = Relay::uninitialised();
    let (code, report) = doctor(&relay, &[]);
    assert_eq!(code, 1);
    let config = check(&report, "config");
    assert_eq!(config["status"], "failed");
    assert!(config["fix"].as_str().unwrap().contains("relay init"), "{config}");
    assert_eq!(check(&report, "model")["status"], "skipped");
    // Without --json: one line per check and the failures named on stderr.
    let run = relay.run(&["doctor"]);
    assert_eq!(run.code, 1);
    assert!(run.stdout.lines().any(|l| l.starts_with("failed") && l.contains("config") && l.contains("relay init")));
    assert!(run.stderr.contains("failed (config, daemon)"), "{}", run.stderr);
}

#[test]
fn a_stopped_daemon_fails_with_relay_start_as_the_fix() {
    let relay = Relay::sandbox();
    let (code, report) = doctor(&relay, &[]);
    assert_eq!(code, 1);
    let daemon = check(&report, "daemon");
    assert_eq!((daemon["status"].as_str(), daemon["fix"].as_str()), (Some("failed"), Some("run `relay start`")));
    for name in ["home", "config", "disk", "clock"] {
        assert_eq!(check(&report, name)["status"], "ok", "{report:#}");
    }
    assert_eq!(check(&report, "channel")["status"], "skipped");
}

#[test]
fn a_started_sandbox_without_a_model_is_all_in_order() {
    let relay = Relay::started();
    // The tests' homes have no disclosure line (a warning): this one has
    // relay's default, naming the operator.
    relay.edit_config(|config| {
        config["courtesy"]["disclosure"] = relay::config::DEFAULT_DISCLOSURE.into();
        config["courtesy"]["operator_name"] = "Ana Pérez".into();
    });
    let (code, report) = doctor(&relay, &[]);
    assert_eq!(code, 0);
    for name in ["home", "config", "daemon", "channel", "courtesy", "disk", "clock"] {
        assert_eq!(check(&report, name)["status"], "ok", "{report:#}");
    }
    assert_eq!(check(&report, "model")["status"], "skipped");
    let run = relay.run(&["doctor"]);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    assert_eq!(run.stdout.lines().count(), NAMES.len() + 1, "{}", run.stdout);
    assert!(run.stdout.ends_with("Everything relay needs is in order.\n"), "{}", run.stdout);

    // A receipt, once a message has gone out (the sandbox's phone gets it at once).
    let id = relay.create(&[]);
    relay.ok(&["send", &id, "Hello"]);
    relay.wait_for(&id, "delivery", |i| !i["first_delivered_at"].is_null());
    let (_, report) = doctor(&relay, &[]);
    let receipts = check(&report, "receipts");
    assert_eq!(receipts["status"], "ok");
    assert!(receipts["detail"].as_str().unwrap().starts_with("last receipt: delivered"), "{receipts}");
}

#[test]
fn messages_overdue_since_the_last_receipt_are_a_warning() {
    let relay = Relay::sandbox();
    relay.edit_config(|c| c["delivery"] = json!({"timeout": "1s"}));
    relay.ok(&["start"]);
    relay.ok(&["sandbox", "offline", CONTACT]);
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    relay.ok(&["send", &id, "Hello"]);
    relay.wait_for(&id, "the delivery timeout", |i| i["awaiting_delivery"]["overdue"] == true);
    let (code, report) = doctor(&relay, &["--offline"]);
    assert_eq!(code, 0);
    let receipts = check(&report, "receipts");
    assert_eq!(receipts["status"], "warning", "{receipts}");
    assert!(receipts["detail"].as_str().unwrap().starts_with("1 message not delivered"), "{receipts}");

    relay.ok(&["sandbox", "online", CONTACT]);
    relay.wait_for(&id, "the delivery", |i| i["awaiting_delivery"].is_null());
    let (_, report) = doctor(&relay, &["--offline"]);
    assert_eq!(check(&report, "receipts")["status"], "ok", "{report:#}");
}

#[test]
fn a_home_others_can_read_is_a_warning_naming_the_fix() {
    let relay = Relay::started();
    // The only warning is the home's (the tests' homes have no disclosure line).
    relay.edit_config(|config| {
        config["courtesy"]["disclosure"] = relay::config::DEFAULT_DISCLOSURE.into();
        config["courtesy"]["operator_name"] = "Ana Pérez".into();
    });
    chmod_home(relay.path(), 0o750, 0o640);
    let (code, report) = doctor(&relay, &[]);
    assert_eq!(code, 0, "a warning alone does not fail");
    let home = check(&report, "home");
    assert_eq!(home["status"], "warning");
    assert!(home["detail"].as_str().unwrap().contains("config.json"), "{home}");
    assert!(home["fix"].as_str().unwrap().contains("chmod -R go-rwx"), "{home}");
    // It reports; it does not change anything.
    assert_eq!(file_mode(&relay.path().join("config.json")), 0o640);
    let run = relay.run(&["doctor"]);
    assert!(run.stdout.contains("Nothing failed; 1 warning to look at."), "{}", run.stdout);
}

#[test]
fn the_model_check_sends_one_tiny_request_and_times_it() {
    let (relay, model) = model::with_tool_calls(queue(vec![Reply::Text("OK".into())]), "native");
    let (code, report) = doctor(&relay, &[]);
    assert_eq!(code, 0);
    let check = check(&report, "model");
    assert_eq!(check["status"], "ok", "{check}");
    assert!(check["latency_ms"].is_u64(), "{check}");
    assert!(check["detail"].as_str().unwrap().starts_with("openai-compatible/scripted answered in "), "{check}");
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert!(requests[0]["max_tokens"].as_u64().is_some_and(|n| n <= 16), "{}", requests[0]);
}

/// With `model.tool_calls: json_schema` (an openai-compatible server's
/// default), a second small request asks for a call through the schema, as
/// a turn would; a server that holds the reply to it passes.
#[test]
fn the_model_check_probes_whether_the_server_honours_the_schema() {
    let (relay, model) =
        model::with_model(queue(vec![Reply::Text("OK".into()), Reply::tool("send_message", json!({"text": "OK"}))]));
    let (code, report) = doctor(&relay, &[]);
    assert_eq!(code, 0, "{report:#}");
    let check = check(&report, "model");
    assert_eq!(check["status"], "ok", "{check}");
    assert!(check["detail"].as_str().unwrap().contains("held a reply to the JSON schema of tool calls"), "{check}");
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let probe = &requests[1];
    assert_eq!(probe["tool_choice"], "none");
    assert_eq!(probe["response_format"]["json_schema"]["schema"]["properties"]["calls"]["minItems"], 1);
    assert_eq!(probe["tools"].as_array().unwrap().len(), 7, "all but the stub, as in a turn");
    assert_eq!(probe["max_tokens"], 200);
}

/// A server that answers the probe in prose fails the check, which says
/// what to set; one that does not answer in the model's time is a warning,
/// and doctor does not hang on it.
#[test]
fn a_server_that_ignores_the_schema_fails_the_check_with_what_to_set() {
    let (relay, _model) = model::with_model(queue(vec![Reply::Text("OK".into()), Reply::Raw("OK".into())]));
    let (code, report) = doctor(&relay, &[]);
    assert_eq!(code, 1);
    let model_check = check(&report, "model");
    assert_eq!(model_check["status"], "failed", "{model_check}");
    let detail = model_check["detail"].as_str().unwrap();
    assert!(detail.contains("did not hold the reply to the JSON schema of tool calls (it is not JSON"), "{detail}");
    assert!(model_check["fix"].as_str().unwrap().contains("relay init --tool-calls text"), "{model_check}");

    let slow =
        Reply::After(std::time::Duration::from_secs(10), Box::new(Reply::tool("send_message", json!({"text": "OK"}))));
    let (relay, _model) = model::started_with(queue(vec![Reply::Text("OK".into()), slow]), json!({}), |c| {
        c["model"]["request_timeout_secs"] = json!(1)
    });
    let started = std::time::Instant::now();
    let (code, report) = doctor(&relay, &[]);
    assert!(started.elapsed() < std::time::Duration::from_secs(8), "doctor waited {:?}", started.elapsed());
    assert_eq!(code, 0, "a warning alone");
    let check = check(&report, "model");
    assert_eq!(check["status"], "warning", "{check}");
    assert!(check["detail"].as_str().unwrap().contains("no answer within 1s"), "{check}");
}

#[test]
fn a_provider_error_fails_the_model_check_cut_short() {
    let long = format!("scripted outage {}", "x".repeat(5000));
    let key = "sk-doctor-test-0123456789abcdef";
    let (relay, _model) = model::started_with(Arc::new(move |_, _| Reply::Error(500, long.clone())), json!({}), |c| {
        c["model"]["api_key"] = json!(key)
    });
    let run = relay.run(&["doctor", "--json"]);
    assert!(!format!("{}{}", run.stdout, run.stderr).contains(key), "the key was shown");
    let (code, report) = doctor(&relay, &[]);
    assert_eq!(code, 1);
    let check = check(&report, "model");
    assert_eq!(check["status"], "failed", "{check}");
    let detail = check["detail"].as_str().unwrap();
    assert!(detail.contains("scripted outage"), "{detail}");
    assert!(detail.chars().count() < 400, "{} characters", detail.chars().count());
}

#[test]
fn a_key_variable_missing_here_fails_naming_it() {
    let relay = Relay::sandbox();
    relay.edit_config(|c| {
        c["model"] =
            json!({"provider": "anthropic", "name": "claude-haiku-4-5", "api_key_env": "RELAY_DOCTOR_NO_SUCH_KEY"})
    });
    let (code, report) = doctor(&relay, &[]);
    assert_eq!(code, 1);
    let check = check(&report, "model");
    assert_eq!(check["status"], "failed");
    assert!(check["detail"].as_str().unwrap().contains("$RELAY_DOCTOR_NO_SUCH_KEY"), "{check}");
    assert!(check["fix"].as_str().unwrap().contains("RELAY_DOCTOR_NO_SUCH_KEY"), "{check}");
    // Seeing it needs no network: --offline says so too.
    let (code, offline) = doctor(&relay, &["--offline"]);
    assert_eq!(code, 1);
    assert_eq!(
        offline["checks"].as_array().unwrap().iter().find(|c| c["name"] == "model").unwrap()["status"],
        "failed"
    );
}

#[test]
fn offline_sends_nothing_to_the_model() {
    let (relay, model) = model::with_model(queue(vec![]));
    let (code, report) = doctor(&relay, &["--offline"]);
    assert_eq!(code, 0);
    assert_eq!(check(&report, "model")["status"], "skipped");
    assert!(model.requests().is_empty());
}

/// Text relay did not write (config.json's model name, the home's path)
/// reaches the terminal escaped and on its check's own line; JSON keeps it.
#[test]
fn no_control_character_from_config_or_paths_reaches_the_terminal() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    let hostile = crate::support::hostile::hostile_text();
    let relay = Relay::sandbox();
    let mut runner = TestRunner::new(Config { cases: 8, failure_persistence: None, ..Config::default() });
    runner
        .run(&hostile, |text| {
            relay.edit_config(|config| {
                config["model"] =
                    serde_json::json!({"provider": "ollama", "name": text, "base_url": "http://127.0.0.1:9"})
            });
            let home = relay.path().join(&text);
            for run in [
                relay.run(&["doctor", "--offline"]),
                relay.command(&["doctor", "--offline"]).env("RELAY_HOME", &home).output().unwrap().into(),
            ] {
                let out = format!("{}{}", run.stdout, run.stderr);
                let hidden =
                    out.chars().find(|&c| (c.is_control() && c != '\n') || ('\u{202a}'..='\u{202e}').contains(&c));
                prop_assert!(hidden.is_none(), "{hidden:?} in {out:?}");
                // Both fail (no daemon; no home): one line per check, no summary.
                prop_assert_eq!(run.stdout.lines().count(), NAMES.len(), "{}", run.stdout);
                prop_assert!(run.stdout.lines().all(|l| STATUSES.iter().any(|s| l.starts_with(s))), "{}", run.stdout);
            }
            let (_, report) = doctor(&relay, &["--offline"]);
            prop_assert!(check(&report, "model")["detail"].as_str().unwrap().contains(&text));
            Ok(())
        })
        .unwrap();
}

/// The courtesy check warns, each with its fix, where a contact is less
/// protected than the defaults protect them: no disclosure line, or one
/// that names no one; with both right it is in order.
#[test]
fn the_courtesy_check_warns_of_a_disclosure_that_is_off_or_names_no_one() {
    let relay = Relay::sandbox();
    let courtesy = |relay: &Relay| check(&doctor(relay, &["--offline"]).1, "courtesy").clone();
    let off = courtesy(&relay);
    assert_eq!(off["status"], "warning");
    assert!(off["detail"].as_str().unwrap().contains("disclosure is off"), "{off}");
    assert!(off["fix"].as_str().unwrap().contains("Article 50(1)"), "{off}");

    relay.edit_config(|config| config["courtesy"]["disclosure"] = relay::config::DEFAULT_DISCLOSURE.into());
    let nameless = courtesy(&relay);
    assert_eq!(nameless["status"], "warning");
    assert!(nameless["fix"].as_str().unwrap().contains("relay init --operator-name"), "{nameless}");

    for wrong in ["Ana\u{1b}[31m", "Ana\nPérez", "  ", &"A".repeat(81)] {
        let said = relay.fails(&["init", "--operator-name", wrong], 2);
        assert!(said.contains("--operator-name "), "{wrong:?}: {said}");
    }
    assert_eq!(courtesy(&relay)["status"], "warning", "a refused name writes nothing");
    relay.ok(&["init", "--operator-name", "Ana Pérez"]);
    let fine = courtesy(&relay);
    assert_eq!(fine["status"], "ok", "{fine}");
    assert!(fine["detail"].as_str().unwrap().ends_with("the disclosure names Ana Pérez"), "{fine}");

    // No opt-out words: STOP would no longer stop anything. Said by doctor and by start.
    relay.edit_config(|config| config["courtesy"]["opt_out_words"] = serde_json::json!([]));
    let no_words = courtesy(&relay);
    assert_eq!(no_words["status"], "warning");
    assert!(no_words["detail"].as_str().unwrap().contains("courtesy.opt_out_words is empty"), "{no_words}");
    assert!(no_words["fix"].as_str().unwrap().contains("for the defaults"), "{no_words}");
    let started = relay.run(&["start"]);
    assert_eq!(started.code, 0);
    let warned = &started.stderr;
    assert!(warned.contains("warning: courtesy.opt_out_words is empty"), "{warned}");
    relay.ok(&["stop"]);
}
